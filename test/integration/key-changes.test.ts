import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { p256 } from '@noble/curves/nist.js';
import { Webhook } from 'standardwebhooks';
import {
  generateSigningKey,
  signKeyProof,
  signReceipt,
  toDigitalReceipt,
  type FlattenedReceipt,
  type SigningKey,
} from '@receipt-service/sdk';
import { runMerchantCommand } from '../../scripts/admin-merchants.js';
import { flattenedReceipt } from '../support/fixtures.js';
import { pollUntil } from '../support/processes.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * Issue 36: a merchant's signing keys and policy are changed by its own keys, not by its API key alone.
 * Registration proves possession of the new key; once the client has an active key, adding a key,
 * revoking one and turning signatures off need a Key-Change-Proof by an active key over that change,
 * single use; every change is announced (merchant.keys.changed). ES256 signatures are low-S only.
 */

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: { reason?: string; fields?: { field: string }[] } };
}
interface KeyList {
  signingKeys: { kid: string; status: string }[];
  requireSignatures: boolean;
}

let stack: TestStack;
const servers: Server[] = [];

beforeAll(async () => {
  stack = await startTestStack();
}, 60_000);

afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await stack?.close();
});

async function startReceiver(): Promise<{
  url: string;
  bodies: string[];
  headers: Record<string, string>[];
}> {
  const bodies: string[] = [];
  const headers: Record<string, string>[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      headers.push({
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      });
      response.writeHead(200).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, bodies, headers };
}

/** A merchant client with a webhook for merchant.keys.changed. */
async function merchantWithWebhook() {
  const client = await stack.apiKey(['merchant']);
  const receiver = await startReceiver();
  const webhook = await stack.request<Data<{ secret: string }>>('POST', '/api/v1/webhooks', {
    apiKey: client.apiKey,
    body: { url: receiver.url, events: ['merchant.keys.changed'] },
  });
  expect(webhook.status).toBe(201);
  return { ...client, receiver, secret: webhook.json.data.secret };
}

const challenge = async (apiKey: string) => {
  const reply = await stack.request<Data<{ nonce: string; clientId: string; expiresAt: string }>>(
    'POST',
    '/api/v1/merchants/signing-keys/challenges',
    { apiKey },
  );
  expect(reply.status).toBe(201);
  return reply.json.data;
};

const possession = async (apiKey: string, key: SigningKey) => {
  const { nonce, clientId } = await challenge(apiKey);
  return signKeyProof({ action: 'register', clientId, kid: key.kid, nonce }, key.privateKey, key.kid);
};

const changeProof = async (apiKey: string, by: SigningKey, action: string, target: string) => {
  const { nonce, clientId } = await challenge(apiKey);
  return signKeyProof({ action, clientId, target, nonce }, by.privateKey, by.kid);
};

const register = (apiKey: string, key: SigningKey, proof: string | undefined, changeHeader?: string) =>
  stack.request<Data<{ kid: string }> & ErrorBody>('POST', '/api/v1/merchants/signing-keys', {
    apiKey,
    body: { publicKey: key.publicJwk, ...(proof ? { proof } : {}) },
    headers: changeHeader ? { 'Key-Change-Proof': changeHeader } : {},
  });
const revoke = (apiKey: string, kid: string, changeHeader?: string) =>
  stack.request<ErrorBody>('DELETE', `/api/v1/merchants/signing-keys/${kid}`, {
    apiKey,
    headers: changeHeader ? { 'Key-Change-Proof': changeHeader } : {},
  });
const policy = (apiKey: string, requireSignatures: boolean, changeHeader?: string) =>
  stack.request<ErrorBody>('POST', '/api/v1/merchants/signing-policy', {
    apiKey,
    body: { requireSignatures },
    headers: changeHeader ? { 'Key-Change-Proof': changeHeader } : {},
  });
const keys = async (apiKey: string) =>
  (await stack.request<Data<KeyList>>('GET', '/api/v1/merchants/signing-keys', { apiKey })).json.data;

/** The merchant.keys.changed events the receiver got, verified with the webhook's secret. */
const announced = (
  merchant: { receiver: { bodies: string[]; headers: Record<string, string>[] }; secret: string },
  count: number,
) => {
  // A move of the service's clock makes the local stack sweep at once: the deliveries are due now.
  stack.clock.advance(1);
  return pollUntil(
    `${count} merchant.keys.changed event(s)`,
    async () => {
      if (merchant.receiver.bodies.length < count) return undefined;
      return merchant.receiver.bodies.map((body, index) => {
        const headers = merchant.receiver.headers[index]!;
        const expected = new Webhook(merchant.secret).sign(
          headers['webhook-id']!,
          new Date(Number(headers['webhook-timestamp']) * 1000),
          body,
        );
        expect(headers['webhook-signature']).toBe(expected);
        return JSON.parse(body) as { type: string; data: Record<string, unknown> };
      });
    },
    { timeoutMs: 30_000, intervalMs: 50 },
  );
};

describe('proof of possession', () => {
  it('a key registered without proof is 400 naming proof; with a wrong or replayed proof too; with it, 201', async () => {
    const client = await stack.apiKey(['merchant']);
    const key = await generateSigningKey({ algorithm: 'ES256' });
    const missing = await register(client.apiKey, key, undefined);
    expect([missing.status, missing.json.error.code, missing.json.error.details?.reason]).toEqual([
      400,
      'INVALID_REQUEST',
      'proof_missing',
    ]);
    expect(missing.json.error.details?.fields?.[0]?.field).toBe('proof');
    expect(missing.json.error.message).toContain('proof is missing');
    // Signed by another key than the one registered: not a proof of holding it.
    const other = await generateSigningKey({ algorithm: 'ES256' });
    const { nonce, clientId } = await challenge(client.apiKey);
    const byOther = await signKeyProof(
      { action: 'register', clientId, kid: key.kid, nonce },
      other.privateKey,
      key.kid,
    );
    expect((await register(client.apiKey, key, byOther)).json.error.details?.reason).toBe('proof_mismatch');
    const proof = await signKeyProof(
      { action: 'register', clientId, kid: key.kid, nonce },
      key.privateKey,
      key.kid,
    );
    expect((await register(client.apiKey, key, proof)).status).toBe(201);
    // The same proof again, for another client's registration of the same key: refused (not its nonce).
    const squatter = await stack.apiKey(['merchant']);
    expect((await register(squatter.apiKey, key, proof)).status).toBe(400);
    expect((await keys(squatter.apiKey)).signingKeys).toEqual([]);
  });

  it('a nonce is good for 5 minutes: an expired one is refused', async () => {
    const client = await stack.apiKey(['merchant']);
    const key = await generateSigningKey();
    const proof = await possession(client.apiKey, key);
    stack.clock.advance(5 * 60_000 + 1_000);
    const late = await register(client.apiKey, key, proof);
    expect([late.status, late.json.error.details?.reason]).toEqual([400, 'proof_nonce']);
    expect((await register(client.apiKey, key, await possession(client.apiKey, key))).status).toBe(201);
  });

  it('a key squatted before proofs (registered by a client that never held it) is taken over by its owner', async () => {
    const owner = await merchantWithWebhook();
    const squatter = await merchantWithWebhook();
    const key = await generateSigningKey();
    // As a registration made before proofs existed would have left it: no `proven`.
    const stored = await stack.deps.repos.merchantKeys.register({
      kid: key.kid,
      clientId: squatter.clientId,
      alg: 'EdDSA',
      publicKey: key.publicJwk as { kty: 'OKP'; crv: 'Ed25519'; x: string },
      createdAt: stack.clock.now().toISOString(),
    });
    expect(stored.stored).toBe(true);
    const taken = await register(owner.apiKey, key, await possession(owner.apiKey, key));
    expect(taken.status).toBe(201);
    expect((await keys(owner.apiKey)).signingKeys.map((listed) => listed.kid)).toEqual([key.kid]);
    expect((await keys(squatter.apiKey)).signingKeys).toEqual([]);
    const [told] = await announced(squatter, 1);
    expect(told).toMatchObject({
      type: 'merchant.keys.changed',
      data: { change: 'key-taken-over', kid: key.kid },
    });
    // Now proven: nobody else takes it, even holding it.
    const again = await register(squatter.apiKey, key, await possession(squatter.apiKey, key));
    expect([again.status, again.json.error.code]).toEqual([409, 'CONFLICT']);
  });
});

describe('a merchant with an active key', () => {
  it('its API key alone cannot turn signatures off, add a key or revoke one, and nothing changes', async () => {
    const merchant = await merchantWithWebhook();
    const first = await generateSigningKey({ algorithm: 'ES256' });
    expect((await register(merchant.apiKey, first, await possession(merchant.apiKey, first))).status).toBe(
      201,
    );
    expect((await policy(merchant.apiKey, true)).status).toBe(200);
    const before = await keys(merchant.apiKey);

    const off = await policy(merchant.apiKey, false);
    expect([off.status, off.json.error.code, off.json.error.details?.reason]).toEqual([
      403,
      'KEY_CHANGE_PROOF_REQUIRED',
      'proof_missing',
    ]);
    expect(off.json.error.message).toContain('Key-Change-Proof');
    const intruder = await generateSigningKey();
    const added = await register(merchant.apiKey, intruder, await possession(merchant.apiKey, intruder));
    expect([added.status, added.json.error.code]).toEqual([403, 'KEY_CHANGE_PROOF_REQUIRED']);
    // A Key-Change-Proof by the intruder's own key is not one by an active key.
    const selfSigned = await register(
      merchant.apiKey,
      intruder,
      await possession(merchant.apiKey, intruder),
      await changeProof(merchant.apiKey, intruder, 'add-key', intruder.kid),
    );
    expect([selfSigned.status, selfSigned.json.error.details?.reason]).toEqual([403, 'unknown_kid']);
    const revoked = await revoke(merchant.apiKey, first.kid);
    expect([revoked.status, revoked.json.error.code]).toEqual([403, 'KEY_CHANGE_PROOF_REQUIRED']);
    // A proof for another change does not do for this one.
    const wrongChange = await revoke(
      merchant.apiKey,
      first.kid,
      await changeProof(merchant.apiKey, first, 'signing-policy', 'requireSignatures=false'),
    );
    expect([wrongChange.status, wrongChange.json.error.details?.reason]).toEqual([403, 'statement']);

    expect(await keys(merchant.apiKey)).toEqual(before);
    expect(
      (
        await stack.request<Data<{ kid: string }>>('GET', `/api/v1/merchant-keys/${intruder.kid}`, {
          apiKey: merchant.apiKey,
        })
      ).status,
    ).toBe(404);
    // Only its own registration and the policy it turned on were announced.
    const events = await announced(merchant, 2);
    // Deliveries are not ordered among themselves: compared as sets.
    expect(events.map((event) => event.data.change).toSorted()).toEqual(['key-registered', 'signing-policy']);
  });

  it('with a Key-Change-Proof each change succeeds once, a replayed proof is refused, and each is announced', async () => {
    const merchant = await merchantWithWebhook();
    const first = await generateSigningKey();
    expect((await register(merchant.apiKey, first, await possession(merchant.apiKey, first))).status).toBe(
      201,
    );
    expect((await policy(merchant.apiKey, true)).status).toBe(200);

    const second = await generateSigningKey({ algorithm: 'ES256' });
    // Listed oldest first: the second one is registered a second later.
    stack.clock.advance(1_000);
    const addProof = await changeProof(merchant.apiKey, first, 'add-key', second.kid);
    const added = await register(
      merchant.apiKey,
      second,
      await possession(merchant.apiKey, second),
      addProof,
    );
    expect(added.status).toBe(201);
    const third = await generateSigningKey();
    // The same Key-Change-Proof again (for another new key's registration): its nonce is spent.
    const replayedAdd = await register(
      merchant.apiKey,
      third,
      await possession(merchant.apiKey, third),
      addProof,
    );
    expect(replayedAdd.status).toBe(403);

    const offProof = await changeProof(merchant.apiKey, second, 'signing-policy', 'requireSignatures=false');
    expect((await policy(merchant.apiKey, false, offProof)).status).toBe(200);
    expect((await policy(merchant.apiKey, true)).status).toBe(200);
    const replayedOff = await policy(merchant.apiKey, false, offProof);
    expect([replayedOff.status, replayedOff.json.error.details?.reason]).toEqual([403, 'nonce']);
    expect((await keys(merchant.apiKey)).requireSignatures).toBe(true);

    const revokeProof = await changeProof(merchant.apiKey, second, 'revoke-key', first.kid);
    expect((await revoke(merchant.apiKey, first.kid, revokeProof)).status).toBe(200);
    expect((await revoke(merchant.apiKey, second.kid, revokeProof)).status).toBe(403);

    const listed = await keys(merchant.apiKey);
    expect(listed.signingKeys.map((key) => [key.kid, key.status])).toEqual([
      [first.kid, 'revoked'],
      [second.kid, 'active'],
    ]);
    const events = await announced(merchant, 6);
    expect(events.map((event) => event.type)).toEqual(Array(6).fill('merchant.keys.changed'));
    expect(events.map((event) => event.data.change).toSorted()).toEqual([
      'key-registered',
      'key-registered',
      'key-revoked',
      'signing-policy',
      'signing-policy',
      'signing-policy',
    ]);
    expect(events.find((event) => event.data.change === 'key-revoked')!.data).toMatchObject({
      clientId: merchant.clientId,
      kid: first.kid,
      by: 'api',
    });
  });

  it('the operator recovers a merchant that lost every key with the admin CLI: audited and announced', async () => {
    const merchant = await merchantWithWebhook();
    const lost = await generateSigningKey();
    expect((await register(merchant.apiKey, lost, await possession(merchant.apiKey, lost))).status).toBe(201);
    expect((await policy(merchant.apiKey, true)).status).toBe(200);
    const target = {
      doc: stack.deps.dynamo.doc,
      tables: {
        merchantKeys: stack.config.tables.merchantKeys!,
        audit: stack.config.tables.audit!,
        webhooks: stack.config.tables.webhooks!,
        webhookDeliveries: stack.config.tables.webhookDeliveries!,
        keyLog: stack.config.tables.keyLog!,
      },
    };
    const printed: string[] = [];
    const result = await runMerchantCommand(
      ['merchants', 'reset-keys', '--client', merchant.clientId, '--json'],
      target,
      (line) => printed.push(line),
    );
    expect(printed.map((line) => JSON.parse(line) as unknown)).toEqual([result]);
    expect(result).toMatchObject({ revokedKids: [lost.kid], requireSignatures: false });
    const listed = await keys(merchant.apiKey);
    expect(listed.requireSignatures).toBe(false);
    expect(listed.signingKeys.map((key) => key.status)).toEqual(['revoked']);
    // Its API key alone now registers a new key (with its proof of possession).
    const fresh = await generateSigningKey();
    expect((await register(merchant.apiKey, fresh, await possession(merchant.apiKey, fresh))).status).toBe(
      201,
    );
    const events = await announced(merchant, 4);
    expect(events.find((event) => event.data.change === 'keys-reset-by-operator')!.data).toMatchObject({
      by: 'operator',
      revokedKids: [lost.kid],
    });
  });
});

describe('ES256 signatures are low-S only', () => {
  const order = p256.Point.CURVE().n;
  /** The high-S twin of a low-S compact JWS: s replaced by n − s, which verifies just as well. */
  const highS = (jws: string): string => {
    const [head, payload, signature] = jws.split('.');
    const bytes = Buffer.from(signature!, 'base64url');
    const s = BigInt(`0x${bytes.subarray(32).toString('hex')}`);
    const twin = Buffer.concat([
      bytes.subarray(0, 32),
      Buffer.from((order - s).toString(16).padStart(64, '0'), 'hex'),
    ]);
    return `${head}.${payload}.${twin.toString('base64url')}`;
  };

  it('the SDK signs low-S; a high-S receipt signature is 400 invalid_signature and nothing is stored', async () => {
    const client = await stack.apiKey(['merchant']);
    const key = await generateSigningKey({ algorithm: 'ES256' });
    expect((await register(client.apiKey, key, await possession(client.apiKey, key))).status).toBe(201);
    for (let attempt = 0; attempt < 8; attempt++) {
      const body = flattenedReceipt({ transactionDate: '2026-11-21T09:15:00Z' });
      const jws = await signReceipt(toDigitalReceipt(body as FlattenedReceipt), key.privateKey, key.kid);
      const s = BigInt(`0x${Buffer.from(jws.split('.')[2]!, 'base64url').subarray(32).toString('hex')}`);
      expect(s <= order / 2n).toBe(true);
      const refused = await stack.request<ErrorBody>('POST', '/api/v1/receipts/encrypt', {
        apiKey: client.apiKey,
        body,
        headers: { 'Receipt-Signature': highS(jws) },
      });
      expect([refused.status, refused.json.error.code, refused.json.error.details?.reason]).toEqual([
        400,
        'invalid_signature',
        'high_s',
      ]);
      const accepted = await stack.request('POST', '/api/v1/receipts/encrypt', {
        apiKey: client.apiKey,
        body,
        headers: { 'Receipt-Signature': jws },
      });
      expect(accepted.status).toBe(200);
    }
  });

  it('a signature whose r or s lies outside 1..n−1 is a 400 like any bad signature, not a server error', async () => {
    const client = await stack.apiKey(['merchant']);
    const key = await generateSigningKey({ algorithm: 'ES256' });
    expect((await register(client.apiKey, key, await possession(client.apiKey, key))).status).toBe(201);
    const body = flattenedReceipt({ transactionDate: '2026-11-21T09:15:00Z' });
    const jws = await signReceipt(toDigitalReceipt(body as FlattenedReceipt), key.privateKey, key.kid);
    const [head, payload, signature] = jws.split('.');
    const bytes = Buffer.from(signature!, 'base64url');
    const scalar = (value: bigint) => Buffer.from(value.toString(16).padStart(64, '0'), 'hex');
    const outOfRange = [
      { twin: Buffer.concat([scalar(0n), bytes.subarray(32)]), reason: 'mismatch' },
      { twin: Buffer.concat([bytes.subarray(0, 32), scalar(order)]), reason: 'high_s' },
    ];
    for (const { twin, reason } of outOfRange) {
      const refused = await stack.request<ErrorBody>('POST', '/api/v1/receipts/encrypt', {
        apiKey: client.apiKey,
        body,
        headers: { 'Receipt-Signature': `${head}.${payload}.${twin.toString('base64url')}` },
      });
      expect([refused.status, refused.json.error.code, refused.json.error.details?.reason]).toEqual([
        400,
        'invalid_signature',
        reason,
      ]);
    }
  });

  it('a high-S proof of possession is refused', async () => {
    const client = await stack.apiKey(['merchant']);
    const key = await generateSigningKey({ algorithm: 'ES256' });
    const refused = await register(client.apiKey, key, highS(await possession(client.apiKey, key)));
    expect([refused.status, refused.json.error.details?.reason]).toEqual([400, 'proof_high_s']);
  });
});
