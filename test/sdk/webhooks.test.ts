import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { signingSecrets, type WebhookRecord } from '../../lib/db/webhooks.js';
import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from '@receipt-service/sdk';

/**
 * verifyWebhook against deliveries signed the way the service signs them (standardwebhooks, one
 * signature per live secret): both secrets during a rotation, and refusals for anything changed,
 * unsigned, signed with another secret, or replayed after the five-minute tolerance.
 */

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;
const secretA = newSecret();

const event: WebhookEvent = {
  type: 'receipt.available',
  timestamp: '2026-11-22T10:00:00.000Z',
  data: {
    receiptId: '6f1c2f9e-3b0e-4c55-9d1a-2f7d4e0b9a11',
    merchantId: '0b8e2a44-8f31-4d3c-a2f4-6c1f1d7e5b22',
    transactionId: 'c3d9e8f7-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
    userId: 'user-1',
    keyId: 'key-1',
    createdAt: '2026-11-22T10:00:00.000Z',
  },
};
const payload = JSON.stringify(event);
const deliveryId = 'msg_ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Headers as the service sends them: every secret that signs at `at`, space separated. */
function signed(secrets: string[], body = payload, at = new Date()): Record<string, string> {
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(deliveryId, at, body)).join(' '),
  };
}

const refusal = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  return 'verified';
};

describe('verifyWebhook', () => {
  it('returns the event of a delivery signed with the secret', () => {
    const secret = newSecret();
    expect(verifyWebhook(payload, signed([secret]), secret)).toEqual(event);
  });

  it('takes the headers in any case, as a fetch Headers object, and the body as bytes', () => {
    const secret = newSecret();
    const headers = signed([secret]);
    const upper = Object.fromEntries(
      Object.entries(headers).map(([name, value]) => [name.toUpperCase(), value]),
    );
    expect(verifyWebhook(payload, upper, secret)).toEqual(event);
    expect(verifyWebhook(payload, new Headers(headers), secret)).toEqual(event);
    expect(verifyWebhook(new TextEncoder().encode(payload), headers, [secret])).toEqual(event);
  });

  describe('during a secret rotation', () => {
    const previous = newSecret();
    const current = newSecret();
    const rotatedAt = new Date();
    // A webhook record as rotate-secret leaves it: the service signs with what signingSecrets returns.
    const record: WebhookRecord = {
      webhookId: 'wh_ABCDEFGHIJKLMNOPQRSTUVWXYZ',
      clientId: 'client-1',
      url: 'https://hooks.example.com/receipts',
      events: ['receipt.available'],
      secret: current,
      previousSecret: previous,
      previousSecretExpiresAt: new Date(rotatedAt.getTime() + 24 * 3_600_000).toISOString(),
      createdAt: rotatedAt.toISOString(),
    };
    const headers = () => signed(signingSecrets(record, new Date()));

    it('the service signs with both, and a receiver holding either one, or both, verifies', () => {
      expect(headers()['webhook-signature']!.split(' ')).toHaveLength(2);
      expect(verifyWebhook(payload, headers(), previous)).toEqual(event);
      expect(verifyWebhook(payload, headers(), current)).toEqual(event);
      expect(verifyWebhook(payload, headers(), [current, previous])).toEqual(event);
    });

    it('a receiver that already switched verifies a delivery signed before the rotation, given both', () => {
      expect(verifyWebhook(payload, signed([previous]), [current, previous])).toEqual(event);
      expect(refusal(() => verifyWebhook(payload, signed([previous]), current))).toBeInstanceOf(
        WebhookVerificationError,
      );
    });

    it('after the overlap only the new secret signs, and the old one no longer verifies', () => {
      const after = new Date(Date.parse(record.previousSecretExpiresAt!) + 1000);
      const secrets = signingSecrets(record, after);
      expect(secrets).toEqual([current]);
      expect(refusal(() => verifyWebhook(payload, signed(secrets), previous))).toBeInstanceOf(
        WebhookVerificationError,
      );
    });
  });

  it.each([
    ['a changed body', () => verifyWebhook(payload.replace('user-1', 'user-2'), signed([secretA]), secretA)],
    [
      'a body re-serialised with other spacing',
      () => verifyWebhook(JSON.stringify(event, null, 2), signed([secretA]), secretA),
    ],
    ['another secret', () => verifyWebhook(payload, signed([newSecret()]), secretA)],
    [
      'another delivery id',
      () => verifyWebhook(payload, { ...signed([secretA]), 'webhook-id': 'msg_other' }, secretA),
    ],
    [
      'a timestamp moved after signing',
      () => {
        const headers = signed([secretA]);
        return verifyWebhook(
          payload,
          { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) },
          secretA,
        );
      },
    ],
    [
      'a timestamp ten minutes old (a replay)',
      () => verifyWebhook(payload, signed([secretA], payload, new Date(Date.now() - 10 * 60_000)), secretA),
    ],
    [
      'a timestamp ten minutes ahead',
      () => verifyWebhook(payload, signed([secretA], payload, new Date(Date.now() + 10 * 60_000)), secretA),
    ],
    [
      'no signature header',
      () => {
        const { 'webhook-signature': _signature, ...headers } = signed([secretA]);
        return verifyWebhook(payload, headers, secretA);
      },
    ],
    [
      'a v2 signature only',
      () => {
        const headers = signed([secretA]);
        return verifyWebhook(
          payload,
          { ...headers, 'webhook-signature': headers['webhook-signature']!.replace('v1,', 'v2,') },
          secretA,
        );
      },
    ],
    [
      'a truncated signature',
      () => {
        const headers = signed([secretA]);
        return verifyWebhook(
          payload,
          { ...headers, 'webhook-signature': headers['webhook-signature']!.slice(0, -4) },
          secretA,
        );
      },
    ],
  ])('refuses %s', (_what, run) => {
    expect(refusal(run)).toBeInstanceOf(WebhookVerificationError);
  });

  it('needs at least one secret', () => {
    expect(refusal(() => verifyWebhook(payload, signed([secretA]), []))).toBeInstanceOf(TypeError);
  });
});
