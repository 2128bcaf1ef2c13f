import { createPrivateKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { openEnvelope } from '../../lib/crypto/envelope.js';
import { DecryptionError } from '../../lib/crypto/errors.js';
import { parsePrivateKey } from '../../lib/crypto/keys.js';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import { envelopeInputSchema } from '../../lib/kernel/envelope-input.js';
import { flattenedReceipt, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity, type OnboardedUser } from '../support/flow.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type HttpReply, type TestStack } from '../support/stack.js';
import { tamperCases, type Json } from '../support/tamper-cases.js';
import {
  assertServiceReply,
  base64Field,
  dataOf,
  describeRequest,
  flipBits,
  fuzzOptions,
  type SuccessEnvelope,
} from './support.js';

/**
 * Tampering with encrypted envelopes and with the inputs of both decrypt paths. Whatever is changed,
 * nothing decrypts and every refusal is byte-for-byte the refusal an expired token gets (apart from
 * request_id and timestamp): the service offers no oracle telling a tamperer what it broke.
 */

type CryptoField = 'ciphertext' | 'iv' | 'authTag' | 'keyBundle.encryptedAesKey' | 'protected';
const CRYPTO_FIELDS: CryptoField[] = [
  'ciphertext',
  'iv',
  'authTag',
  'keyBundle.encryptedAesKey',
  'protected',
];
/** The fields that decide whether an envelope opens; version is shared by every envelope here. */
const DECISIVE = [
  'ciphertext',
  'iv',
  'authTag',
  'keyBundle.encryptedAesKey',
  'protected',
  'receiptId',
  'merchantId',
  'transactionId',
];

const read = (envelope: ReceiptEnvelope, field: string): string =>
  field.startsWith('keyBundle.')
    ? envelope.keyBundle[field.slice('keyBundle.'.length) as 'encryptedAesKey' | 'keyId']
    : (envelope[field as keyof ReceiptEnvelope] as string);

const write = (envelope: ReceiptEnvelope, field: string, value: string): ReceiptEnvelope =>
  field.startsWith('keyBundle.')
    ? { ...envelope, keyBundle: { ...envelope.keyBundle, [field.slice('keyBundle.'.length)]: value } }
    : { ...envelope, [field]: value };

// `protected` is unpadded base64url (it is the JWE header); the other crypto fields are standard base64.
const isUrl = (field: string) => field === 'protected';

/** Token ids are UUIDs; the version and variant characters stay put so the tampered id still validates. */
const HEX_POSITIONS = Array.from({ length: 36 }, (_, index) => index).filter(
  (index) => ![8, 13, 14, 18, 19, 23].includes(index),
);
const retouch = (tokenId: string, edits: { position: number; delta: number }[]): string => {
  const chars = [...tokenId];
  for (const { position, delta } of edits)
    chars[position] = ((parseInt(chars[position]!, 16) + delta) % 16).toString(16);
  return chars.join('');
};

/**
 * A user whose P-256 key is made here, as on a device: only its public half is imported
 * (onboarding/keys) and registered. Same shape as onboardUser's, the private key as PKCS#8.
 */
async function onboardDeviceUser(stack: TestStack, apiKey: string): Promise<OnboardedUser> {
  const device = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const publicKey = device.publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  const imported = await stack.request<SuccessEnvelope<{ keyId: string }>>(
    'POST',
    '/api/v1/onboarding/keys',
    {
      apiKey,
      body: { publicKey },
    },
  );
  const hashedPan = newHashedPan();
  const { keyId } = imported.json.data;
  const registered = await stack.request<SuccessEnvelope<{ userId: string }>>(
    'POST',
    '/api/v1/onboarding/register',
    { apiKey, body: { hashedPan, publicKey, keyId } },
  );
  expect([imported.status, registered.status]).toEqual([201, 200]);
  return {
    userId: registered.json.data.userId,
    keyId,
    publicKey,
    privateKey: device.privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
    hashedPan,
  };
}

describe('tampered envelopes, tokens and keys never decrypt and are refused uniformly', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let issuer: { apiKey: string };
  let otherIssuer: { apiKey: string };
  let user: OnboardedUser;
  let stranger: OnboardedUser;
  let foreigner: OnboardedUser;
  const envelopes = {} as Record<'a' | 'b' | 'c' | 'stranger' | 'p256', ReceiptEnvelope>;
  let device: OnboardedUser;
  let deviceToken: string;
  const payments: { paymentId: string; gateway: string }[] = [];
  let plaintextA: unknown;
  let token: string;
  let expiredToken: string;
  let strangerToken: string;
  let foreignToken: string;
  /** The expired-token refusal of receipts/decrypt, without request_id and timestamp. */
  let uniform: unknown;

  const decryptEnvelope = (
    envelope: unknown,
    accessTokenId = token,
    privateKey = user.privateKey,
    apiKey = issuer.apiKey,
  ) =>
    stack.request('POST', '/api/v1/receipts/decrypt', {
      apiKey,
      body: { envelope, accessTokenId, privateKey },
    });

  const decryptPayment = (
    index: number,
    accessTokenId = token,
    privateKey = user.privateKey,
    apiKey = issuer.apiKey,
  ) =>
    stack.request('POST', '/api/v1/payments/decrypt', {
      apiKey,
      body: { ...payments[index]!, accessTokenId, privateKey },
    });

  /** Refused exactly like an expired token: 403 and the same body apart from request_id and timestamp. */
  const expectUniformRefusal = (reply: HttpReply, what: string) => {
    assertServiceReply(reply, what);
    expect({ what, status: reply.status, body: withoutRequestIdentity(reply.text) }).toEqual({
      what,
      status: 403,
      body: uniform,
    });
  };

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack();
    const merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
    user = await onboardUser(stack, issuer.apiKey);
    stranger = await onboardUser(stack, issuer.apiKey);
    foreigner = await onboardUser(stack, otherIssuer.apiKey);
    const encrypt = async (body: unknown) => {
      const reply = await stack.request<SuccessEnvelope<ReceiptEnvelope>>(
        'POST',
        '/api/v1/receipts/encrypt',
        { apiKey: merchant.apiKey, body },
      );
      expect(reply.status).toBe(200);
      return reply.json.data;
    };
    const nested = (hashedPan: string) => ({
      receipt: sampleReceipt(),
      recipientIdentifier: { type: 'email', value: 'tamper@example.com' },
      recipientHashedPan: hashedPan,
    });
    envelopes.a = await encrypt(nested(user.hashedPan));
    envelopes.b = await encrypt(nested(user.hashedPan));
    envelopes.c = await encrypt(flattenedReceipt({ recipientHashedPan: user.hashedPan }));
    envelopes.stranger = await encrypt(nested(stranger.hashedPan));
    device = await onboardDeviceUser(stack, issuer.apiKey);
    envelopes.p256 = await encrypt(nested(device.hashedPan));
    expect(envelopes.p256.keyBundle.algorithm).toBe('ECDH-ES+A256KW');
    for (const [gateway, extra] of [
      ['gateway_a', { amount: 1548 }],
      ['gateway_b', { cardNonce: 'cnon:card-nonce-ok' }],
    ] as const) {
      const reply = await stack.request<SuccessEnvelope<{ paymentId: string }>>(
        'POST',
        `/api/v1/payments/${gateway}/create`,
        {
          apiKey: merchant.apiKey,
          body: { ...flattenedReceipt({ recipientHashedPan: user.hashedPan }), ...extra },
        },
      );
      expect(reply.status).toBe(200);
      payments.push({ paymentId: reply.json.data.paymentId, gateway });
    }
    expiredToken = await grantToken(stack, issuer.apiKey, user);
    stack.clock.advance(181_000);
    token = await grantToken(stack, issuer.apiKey, user);
    strangerToken = await grantToken(stack, issuer.apiKey, stranger);
    deviceToken = await grantToken(stack, issuer.apiKey, device);
    foreignToken = await grantToken(stack, otherIssuer.apiKey, foreigner);
    const reference = await decryptEnvelope(envelopes.a, expiredToken);
    expect(reference.status).toBe(403);
    uniform = withoutRequestIdentity(reference.text);
    const opened = await decryptEnvelope(envelopes.a);
    expect(opened.status).toBe(200);
    plaintextA = dataOf(opened);
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  it('refuses an expired token with the same DECRYPTION_ERROR body on both decrypt paths', async () => {
    expect(uniform).toEqual({
      success: false,
      error: { code: 'DECRYPTION_ERROR', message: expect.any(String) },
    });
    for (const index of [0, 1])
      expectUniformRefusal(await decryptPayment(index, expiredToken), `payments/decrypt ${index} expired`);
    // The untampered inputs open, so every refusal below is down to the tampering.
    for (const name of ['a', 'b', 'c', 'stranger'] as const) {
      const reply =
        name === 'stranger'
          ? await decryptEnvelope(envelopes.stranger, strangerToken, stranger.privateKey)
          : await decryptEnvelope(envelopes[name]);
      expect({ name, status: reply.status }).toEqual({ name, status: 200 });
    }
    for (const index of [0, 1]) expect((await decryptPayment(index)).status).toBe(200);
    expect((await decryptEnvelope(envelopes.p256, deviceToken, device.privateKey)).status).toBe(200);
  });

  it('never decrypts an envelope with any number of bits flipped in ciphertext, iv, authTag, encryptedAesKey or protected', async () => {
    const flips = fc.record({
      // 'p256': an ECDH-ES+A256KW envelope, its wrapped key the 40-byte AES-KW output.
      base: fc.constantFrom('a' as const, 'c' as const, 'p256' as const),
      field: fc.constantFrom(...CRYPTO_FIELDS),
      bits: fc.array(fc.nat(), { minLength: 1, maxLength: 64 }),
    });
    await fc.assert(
      fc.asyncProperty(flips, async ({ base, field, bits }) => {
        const original = envelopes[base];
        const bytes = base64Field.decode(read(original, field), isUrl(field));
        const tampered = write(original, field, base64Field.encode(flipBits(bytes, bits), isUrl(field)));
        expectUniformRefusal(
          base === 'p256'
            ? await decryptEnvelope(tampered, deviceToken, device.privateKey)
            : await decryptEnvelope(tampered),
          `${field} of ${base} with bits ${bits.join(',')} flipped`,
        );
      }),
      fuzzOptions(60),
    );
  });

  it('never decrypts an envelope whose fields were truncated or extended, as bytes or as text', async () => {
    const change = fc.oneof(
      fc.record({ kind: fc.constant('truncate-bytes' as const), keep: fc.nat() }),
      fc.record({
        kind: fc.constant('extend-bytes' as const),
        extra: fc.uint8Array({ minLength: 1, maxLength: 32 }),
        atStart: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('truncate-text' as const), drop: fc.integer({ min: 1, max: 8 }) }),
      fc.record({
        kind: fc.constant('extend-text' as const),
        suffix: fc.constantFrom('=', '==', 'A', 'AA', 'AAAA', '\n', ' ', '.', '-', '/'),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...CRYPTO_FIELDS), change, async (field, edit) => {
        const value = read(envelopes.a, field);
        const bytes = base64Field.decode(value, isUrl(field));
        let changed: string;
        if (edit.kind === 'truncate-bytes')
          changed = base64Field.encode(bytes.subarray(0, edit.keep % bytes.length), isUrl(field));
        else if (edit.kind === 'extend-bytes') {
          const extra = Buffer.from(edit.extra);
          changed = base64Field.encode(
            edit.atStart ? Buffer.concat([extra, bytes]) : Buffer.concat([bytes, extra]),
            isUrl(field),
          );
        } else if (edit.kind === 'truncate-text')
          changed = value.slice(0, Math.max(0, value.length - edit.drop));
        else changed = `${value}${edit.suffix}`;
        expectUniformRefusal(
          await decryptEnvelope(write(envelopes.a, field, changed)),
          `${field} ${JSON.stringify(edit)}`,
        );
      }),
      fuzzOptions(40),
    );
  });

  it('never decrypts an envelope whose crypto fields were replaced with base64 garbage', async () => {
    const garbage = fc
      .oneof(
        fc.base64String({ maxLength: 64 }),
        fc.stringMatching(/^[A-Za-z0-9+/_-]{1,60}={0,3}$/),
        fc.string({ unit: 'binary', maxLength: 30 }),
        fc.constantFrom(
          '',
          '=',
          '====',
          'AAAA',
          'AA==',
          'A===',
          '////',
          '++++',
          '-_-_',
          '%%%%',
          'null',
          '{}',
          '\u0000',
          'eyJhbGciOiJub25lIn0',
        ),
      )
      .filter((value) => value.length <= 64);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...CRYPTO_FIELDS), garbage, async (field, value) => {
        fc.pre(value !== read(envelopes.a, field));
        expectUniformRefusal(
          await decryptEnvelope(write(envelopes.a, field, value)),
          `${field} replaced by ${JSON.stringify(value)}`,
        );
      }),
      fuzzOptions(40),
    );
  });

  it("never decrypts a mix of two valid envelopes' fields, for the same user or another", async () => {
    const swap = fc.oneof(
      // Same user: a strict subset, since taking every decisive field would rebuild the other valid envelope.
      fc.record({
        source: fc.constant('b' as const),
        fields: fc.subarray(DECISIVE, { minLength: 1, maxLength: DECISIVE.length - 1 }),
      }),
      fc.record({ source: fc.constant('b' as const), fields: fc.constant(['keyBundle']) }),
      fc.record({
        source: fc.constant('stranger' as const),
        fields: fc.subarray([...DECISIVE, 'keyId', 'keyBundle.keyId'], { minLength: 1 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(swap, async ({ source, fields }) => {
        const donor = envelopes[source];
        const mixed = fields.reduce<ReceiptEnvelope>(
          (envelope, field) =>
            field === 'keyBundle'
              ? { ...envelope, keyBundle: donor.keyBundle }
              : write(envelope, field, read(donor, field)),
          envelopes.a,
        );
        expectUniformRefusal(
          await decryptEnvelope(mixed),
          `fields ${fields.join(', ')} taken from envelope ${source}`,
        );
      }),
      fuzzOptions(40),
    );
  });

  it('opens an envelope with a damaged private key only if the key still is the right key, and otherwise refuses uniformly', async () => {
    // A flipped bit in the CRT parameters can leave a key that still decrypts correctly, so the claim is
    // "the right receipt or the uniform refusal", never some third answer.
    const damage = fc.oneof(
      fc.record({
        kind: fc.constant('flip' as const),
        bits: fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
      }),
      fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
      fc.record({
        kind: fc.constant('pem' as const),
        bits: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
      }),
    );
    await fc.assert(
      fc.asyncProperty(damage, async (edit) => {
        const der = Buffer.from(user.privateKey, 'base64');
        let privateKey: string;
        if (edit.kind === 'truncate')
          privateKey = der.subarray(0, 1 + (edit.keep % (der.length - 1))).toString('base64');
        else if (edit.kind === 'flip') privateKey = flipBits(der, edit.bits).toString('base64');
        else {
          const body = flipBits(der, edit.bits)
            .toString('base64')
            .replace(/(.{64})/g, '$1\n');
          privateKey = `-----BEGIN PRIVATE KEY-----\n${body}\n-----END PRIVATE KEY-----\n`;
        }
        const reply = await decryptEnvelope(envelopes.a, token, privateKey);
        assertServiceReply(
          reply,
          describeRequest('POST', '/api/v1/receipts/decrypt', `private key ${JSON.stringify(edit)}`),
        );
        if (reply.status === 200) expect(dataOf(reply)).toEqual(plaintextA);
        else expectUniformRefusal(reply, `private key ${JSON.stringify(edit)}`);
      }),
      fuzzOptions(25),
    );
  });

  it('refuses tampered and random access token ids on both decrypt paths', async () => {
    const tokenId = fc.oneof(
      fc
        .uniqueArray(
          fc.record({ position: fc.constantFrom(...HEX_POSITIONS), delta: fc.integer({ min: 1, max: 15 }) }),
          {
            minLength: 1,
            maxLength: 8,
            selector: (edit) => edit.position,
          },
        )
        .map((edits) => ({ label: `retouched ${JSON.stringify(edits)}`, make: () => retouch(token, edits) })),
      fc.uuid().map((id) => ({ label: `random ${id}`, make: () => id })),
    );
    await fc.assert(
      fc.asyncProperty(
        tokenId,
        fc.constantFrom('receipt', 'payment-a', 'payment-b'),
        async ({ label, make }, path) => {
          const accessTokenId = make();
          fc.pre(accessTokenId !== token);
          const reply =
            path === 'receipt'
              ? await decryptEnvelope(envelopes.a, accessTokenId)
              : await decryptPayment(path === 'payment-a' ? 0 : 1, accessTokenId);
          expectUniformRefusal(reply, `${path} with token ${label}`);
        },
      ),
      fuzzOptions(40),
    );
  });

  it("refuses other users' and other clients' tokens and keys on both decrypt paths", async () => {
    const strangerPem = createPrivateKey({
      key: Buffer.from(stranger.privateKey, 'base64'),
      format: 'der',
      type: 'pkcs8',
    })
      .export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const attempts: [string, string, string, string][] = [
      ["another user's token and key", strangerToken, stranger.privateKey, issuer.apiKey],
      ["another user's token with the right key", strangerToken, user.privateKey, issuer.apiKey],
      ["another client's token and key, through our key", foreignToken, foreigner.privateKey, issuer.apiKey],
      [
        "another client's token and key, through its own key",
        foreignToken,
        foreigner.privateKey,
        otherIssuer.apiKey,
      ],
      ['our valid token and key, through another client', token, user.privateKey, otherIssuer.apiKey],
      ['our valid token with a stranger key', token, stranger.privateKey, issuer.apiKey],
      ['our valid token with a stranger key as PEM', token, strangerPem, issuer.apiKey],
      ['our valid token with a garbage key', token, 'bm90IGEga2V5', issuer.apiKey],
      ['an unknown token', randomUUID(), user.privateKey, issuer.apiKey],
    ];
    for (const [label, accessTokenId, privateKey, apiKey] of attempts) {
      expectUniformRefusal(
        await decryptEnvelope(envelopes.a, accessTokenId, privateKey, apiKey),
        `receipts/decrypt: ${label}`,
      );
      for (const index of [0, 1]) {
        expectUniformRefusal(
          await decryptPayment(index, accessTokenId, privateKey, apiKey),
          `payments/decrypt ${index}: ${label}`,
        );
      }
    }
  });

  it('still opens every untouched envelope and payment afterwards: the refusals above were the tampering', async () => {
    expect((await decryptEnvelope(envelopes.a)).json).toEqual({ success: true, data: plaintextA });
    expect((await decryptEnvelope(envelopes.c)).status).toBe(200);
    for (const index of [0, 1]) expect((await decryptPayment(index)).status).toBe(200);
  });
});

describe('the shared tamper cases, for an RSA and a P-256 recipient, get the crypto layer’s verdict over HTTP', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let issuer: { apiKey: string };
  const recipients = {} as Record<
    'rsa' | 'p256',
    { user: { userId: string; keyId: string }; privateKey: string; envelope: ReceiptEnvelope }
  >;

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack();
    const merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    const rsaUser = await onboardUser(stack, issuer.apiKey);
    const deviceUser = await onboardDeviceUser(stack, issuer.apiKey);
    for (const [kind, hashedPan] of [
      ['rsa', rsaUser.hashedPan],
      ['p256', deviceUser.hashedPan],
    ] as const) {
      const reply = await stack.request<SuccessEnvelope<ReceiptEnvelope>>(
        'POST',
        '/api/v1/receipts/encrypt',
        {
          apiKey: merchant.apiKey,
          body: { ...flattenedReceipt({ recipientHashedPan: hashedPan }) },
        },
      );
      expect(reply.status).toBe(200);
      const user = kind === 'rsa' ? rsaUser : deviceUser;
      recipients[kind] = { user, privateKey: user.privateKey, envelope: reply.json.data };
    }
    expect(recipients.p256.envelope.keyBundle.algorithm).toBe('ECDH-ES+A256KW');
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  it.each(['rsa', 'p256'] as const)(
    '%s: every case is refused uniformly unless the crypto layer opens it',
    async (kind) => {
      const { user, privateKey, envelope } = recipients[kind];
      const decrypt = (body: unknown, token: string) =>
        stack.request('POST', '/api/v1/receipts/decrypt', {
          apiKey: issuer.apiKey,
          body: { envelope: body, accessTokenId: token, privateKey },
        });
      const expired = await grantToken(stack, issuer.apiKey, user);
      stack.clock.advance(181_000);
      const uniform = withoutRequestIdentity((await decrypt(envelope, expired)).text);
      const token = await grantToken(stack, issuer.apiKey, user);
      const key = parsePrivateKey(privateKey);
      expect(openEnvelope(envelope, key).length).toBeGreaterThan(0);
      const verdicts: Record<string, string> = {};
      const opened: string[] = [];
      for (const tamper of tamperCases) {
        const mutated = tamper.mutate(JSON.parse(JSON.stringify(envelope)) as Json);
        let opens = true;
        try {
          openEnvelope(mutated, key);
          // A case that changes nothing in this layout (removing an absent alg or epk) proves nothing.
          if (JSON.stringify(mutated) !== JSON.stringify(envelope)) opened.push(tamper.name);
        } catch (error) {
          expect(error).toBeInstanceOf(DecryptionError);
          opens = false;
        }
        const reply = await decrypt(mutated, token);
        assertServiceReply(reply, `${kind}: ${tamper.name}`);
        const sameKeyIds =
          mutated?.keyId === envelope.keyId &&
          (mutated?.keyBundle as Json | undefined)?.keyId === envelope.keyId;
        let expected: string;
        if (!envelopeInputSchema.safeParse(mutated).success) expected = '400';
        // The crypto layer opens it, but the server also holds the envelope to the token's key.
        else if (opens) expected = sameKeyIds ? '200' : '403';
        else expected = '403';
        const actual =
          reply.status === 403 &&
          JSON.stringify(withoutRequestIdentity(reply.text)) !== JSON.stringify(uniform)
            ? '403 (not uniform)'
            : String(reply.status);
        verdicts[tamper.name] = actual === expected ? 'as expected' : `${actual}, expected ${expected}`;
      }
      expect(Object.entries(verdicts).filter(([, verdict]) => verdict !== 'as expected')).toEqual([]);
      expect(Object.keys(verdicts).length).toBe(tamperCases.length);
      // Only changes outside what the envelope binds leave it openable.
      expect(opened).toEqual([
        'envelope keyId changed (not bound)',
        'keyBundle keyId changed (not bound)',
        'unknown envelope member added',
      ]);
      expect((await decrypt(envelope, token)).status).toBe(200);
    },
  );
});
