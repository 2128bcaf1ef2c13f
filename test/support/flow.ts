import { expect } from '@jest/globals';
import { newHashedPan } from './fixtures.js';
import type { TestStack } from './stack.js';

export interface OnboardedUser {
  userId: string;
  keyId: string;
  publicKey: string;
  privateKey: string;
  hashedPan: string;
}

interface Data<T> {
  success: true;
  data: T;
}

/** Steps 1 and 2 of the spec's flow, over HTTP. */
export async function onboardUser(
  stack: TestStack,
  issuerKey: string,
  hashedPan = newHashedPan(),
): Promise<OnboardedUser> {
  const keys = await stack.request<
    Data<{ keyId: string; publicKey: string; privateKey: string; algorithm: string }>
  >('POST', '/api/v1/onboarding/generate-keys', { apiKey: issuerKey });
  expect(keys.status).toBe(200);
  const { keyId, publicKey, privateKey } = keys.json.data;
  const registered = await stack.request<Data<{ userId: string; status: string }>>(
    'POST',
    '/api/v1/onboarding/register',
    {
      apiKey: issuerKey,
      body: { hashedPan, publicKey, keyId },
    },
  );
  expect(registered.status).toBe(200);
  return { userId: registered.json.data.userId, keyId, publicKey, privateKey, hashedPan };
}

/** Step 4: a token for the user's key. */
export async function grantToken(
  stack: TestStack,
  issuerKey: string,
  user: { userId: string; keyId: string },
): Promise<string> {
  const granted = await stack.request<Data<{ tokenId: string }>>('POST', '/api/v1/keys/grant-access', {
    apiKey: issuerKey,
    body: { userId: user.userId, keyId: user.keyId },
  });
  expect(granted.status).toBe(200);
  return granted.json.data.tokenId;
}

/** The parts of an error body that must be identical between two refusals. */
export const withoutRequestIdentity = (text: string): unknown => {
  const body = JSON.parse(text) as { error: Record<string, unknown> };
  const { request_id: _requestId, timestamp: _timestamp, ...rest } = body.error;
  return { ...body, error: rest };
};
