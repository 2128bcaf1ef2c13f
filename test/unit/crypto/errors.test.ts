import { describe, expect, it } from '@jest/globals';
import { parsePrivateKey, parsePublicKey } from '../../../lib/crypto/keys.js';
import { KeyGenerationError, KeyUnavailableError } from '../../../lib/crypto/errors.js';
import { DecryptionError as HttpDecryptionError } from '../../../lib/kernel/errors.js';
import { errorResponse } from '../../../lib/http/error-envelope.js';

/*
 * The crypto module throws its own errors; lib/http/error-envelope.ts is the one place they become
 * HTTP. These hold each crypto failure to the response the API promised for it.
 */
const now = new Date('2030-01-01T00:00:00Z');

function responseTo(run: () => unknown) {
  try {
    run();
  } catch (error) {
    const response = errorResponse(error, 'req-1', now);
    return { ...response, body: JSON.parse(response.body) as { error: Record<string, unknown> } };
  }
  throw new Error('expected the call to throw');
}

describe('crypto errors over HTTP', () => {
  it('a refused private key is the uniform 403, its reason kept out of the body', () => {
    const response = responseTo(() => parsePrivateKey('not a key'));
    expect(response.statusCode).toBe(403);
    expect(response.body.error).toEqual({
      code: 'DECRYPTION_ERROR',
      message: new HttpDecryptionError('any').message,
      timestamp: now.toISOString(),
      request_id: 'req-1',
    });
    expect(JSON.stringify(response.body)).not.toContain('unparseable');
  });

  it('a public key outside the allow-list is a 400 naming the field it came in', () => {
    const response = responseTo(() => parsePublicKey('AAAA', 'recipientPublicKey'));
    expect(response.statusCode).toBe(400);
    expect(response.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'recipientPublicKey is not an acceptable public key',
      details: {
        fields: [
          {
            field: 'recipientPublicKey',
            message: expect.stringContaining('RSA 2048 to 4096 bits or EC P-256'),
          },
        ],
      },
    });
  });

  it('an unreachable key service is a 503 to retry, with its details and without the cause', () => {
    const cause = new Error('connect ECONNREFUSED 10.0.0.1:443');
    const response = responseTo(() => {
      throw new KeyUnavailableError(
        'Escrow key service unavailable (Decrypt)',
        { reason: 'Error' },
        { cause },
      );
    });
    expect(response.statusCode).toBe(503);
    expect(response.headers['Retry-After']).toBe('1');
    expect(response.body.error).toMatchObject({
      code: 'service_unavailable',
      details: { reason: 'Error' },
    });
    expect(JSON.stringify(response.body)).not.toContain('10.0.0.1');
  });

  it('a failed key generation is the named 500 with no details', () => {
    const response = responseTo(() => {
      throw new KeyGenerationError({ cause: new Error('openssl said no') });
    });
    expect(response.statusCode).toBe(500);
    expect(response.body.error).toEqual({
      code: 'KEY_GENERATION_FAILED',
      message: 'Failed to generate key pair',
      timestamp: now.toISOString(),
      request_id: 'req-1',
    });
  });
});
