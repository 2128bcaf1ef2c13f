import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { REDACTED } from '../../lib/kernel/log.js';
import { LogTelemetry } from '../../lib/kernel/telemetry.js';
import { type DecryptRefusal } from '../../lib/receipts/vocabulary.js';
import { flattenedReceipt, newHashedPan } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}

/**
 * What an operator counts, driven over HTTP on the local stack and read from its telemetry, which
 * locally is the log: each count is a log line and a running total.
 */
describe('operator metrics over HTTP', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let telemetry: LogTelemetry;
  let merchant: { apiKey: string };
  let issuer: { apiKey: string };
  let user: OnboardedUser;

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack({ env: { TOKEN_TTL_SECONDS: '120' } });
    if (!(stack.deps.telemetry instanceof LogTelemetry))
      throw new Error('the local stack counts through LogTelemetry');
    telemetry = stack.deps.telemetry;
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  const encrypt = async (recipientHashedPan: string) => {
    const reply = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: flattenedReceipt({ recipientHashedPan }),
    });
    expect(reply.status).toBe(200);
    return reply.json.data;
  };

  const decrypt = (envelope: unknown, accessTokenId: string, privateKey = user.privateKey) =>
    stack.request('POST', '/api/v1/receipts/decrypt', {
      apiKey: issuer.apiKey,
      body: { envelope, accessTokenId, privateKey },
    });

  /** The metric lines the local stack wrote to its log. */
  const metricLines = (): Record<string, unknown>[] =>
    logs
      .text()
      .split('\n')
      .filter((line) => line.startsWith('{') && line.includes('"message":"metric"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  it('counts receipts encrypted for a user and escrowed, once each, not again on an identical retry', async () => {
    const before = {
      encrypted: telemetry.total('ReceiptsEncrypted'),
      escrowed: telemetry.total('ReceiptsEscrowed'),
    };
    const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const reply = await stack.request('POST', '/api/v1/receipts/encrypt', {
        apiKey: merchant.apiKey,
        body,
      });
      expect(reply.status).toBe(200);
    }
    await encrypt(newHashedPan());

    expect(telemetry.total('ReceiptsEncrypted')).toBe(before.encrypted + 1);
    expect(telemetry.total('ReceiptsEscrowed')).toBe(before.escrowed + 1);
  });

  it('counts each decrypt refusal under its reason, while every response is the same uniform 403', async () => {
    const envelope = await encrypt(user.hashedPan);
    const escrowed = await encrypt(newHashedPan());
    const otherPrivateKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ format: 'der', type: 'pkcs8' })
      .toString('base64');
    const token = await grantToken(stack, issuer.apiKey, user);

    const refusals: [DecryptRefusal, () => ReturnType<typeof decrypt>][] = [
      ['token_unknown', () => decrypt(envelope, randomUUID())],
      ['envelope_escrowed', () => decrypt(escrowed, token)],
      ['private_key_mismatch', () => decrypt(envelope, token, otherPrivateKey)],
      ['private_key_invalid', () => decrypt(envelope, token, Buffer.from('not a key').toString('base64'))],
      [
        'envelope_unopenable',
        () => decrypt({ ...envelope, ciphertext: Buffer.from('tampered').toString('base64') }, token),
      ],
      [
        'token_expired',
        async () => {
          stack.clock.advance(121_000);
          return decrypt(envelope, token);
        },
      ],
    ];
    const bodies = new Set<string>();
    for (const [reason, attempt] of refusals) {
      const before = telemetry.total('DecryptRefusals', { reason });
      const answered = telemetry.total('DecryptionErrorAnswers');
      const reply = await attempt();

      expect([reason, reply.status]).toEqual([reason, 403]);
      expect(reply.text).not.toContain(reason);
      bodies.add(JSON.stringify(withoutRequestIdentity(reply.text)));
      expect([reason, telemetry.total('DecryptRefusals', { reason })]).toEqual([reason, before + 1]);
      // And the answer itself, by its code, once: what the decryption-errors alarm reads.
      expect([reason, telemetry.total('DecryptionErrorAnswers')]).toEqual([reason, answered + 1]);
      expect(metricLines()).toContainEqual(
        expect.objectContaining({ metric: 'DecryptRefusals', reason, count: 1 }),
      );
    }
    expect(bodies.size).toBe(1);
    expect(JSON.parse([...bodies][0]!)).toMatchObject({
      success: false,
      error: { code: 'DECRYPTION_ERROR' },
    });
  });

  it('counts a grant refused at the active-token limit', async () => {
    const fresh = await onboardUser(stack, issuer.apiKey);
    for (let granted = 0; granted < stack.config.maxActiveTokens; granted += 1)
      await grantToken(stack, issuer.apiKey, fresh);
    const before = telemetry.total('GrantLimitRefusals');
    const answered = telemetry.total('GrantErrorAnswers');

    const refused = await stack.request<{ error: { code: string } }>('POST', '/api/v1/keys/grant-access', {
      apiKey: issuer.apiKey,
      body: { userId: fresh.userId, keyId: fresh.keyId },
    });

    expect([refused.status, refused.json.error.code]).toEqual([429, 'GRANT_ERROR']);
    expect(telemetry.total('GrantLimitRefusals')).toBe(before + 1);
    expect(telemetry.total('GrantErrorAnswers')).toBe(answered + 1);
  });

  it('counts payment failures per gateway: a decline on gateway_b', async () => {
    const before = telemetry.total('PaymentFailures', { gateway: 'gateway_b', outcome: 'declined' });
    const others = telemetry.total('PaymentFailures', { gateway: 'gateway_a' });

    const declined = await stack.request<{ error: { code: string } }>(
      'POST',
      '/api/v1/payments/gateway_b/create',
      {
        apiKey: merchant.apiKey,
        body: {
          ...flattenedReceipt({ recipientHashedPan: user.hashedPan }),
          cardNonce: 'cnon:card-nonce-declined',
        },
      },
    );

    expect([declined.status, declined.json.error.code]).toEqual([402, 'PAYMENT_DECLINED']);
    expect(telemetry.total('PaymentFailures', { gateway: 'gateway_b', outcome: 'declined' })).toBe(
      before + 1,
    );
    expect(telemetry.total('PaymentFailures', { gateway: 'gateway_a' })).toBe(others);
  });

  it('redacts a granted token id wherever it is logged afterwards', async () => {
    const token = await grantToken(stack, issuer.apiKey, user);
    const requestId = randomUUID();

    stack.deps.logger.info('support note', { correlation: token, requestId });

    const line = logs
      .text()
      .split('\n')
      .find((text) => text.includes('"support note"'));
    expect(line).toBeDefined();
    expect(line).not.toContain(token);
    expect(JSON.parse(line!)).toMatchObject({ correlation: REDACTED, requestId });
  });
});
