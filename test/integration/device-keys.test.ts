import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ECDH } from 'node:crypto';
import { LogTelemetry } from '../../lib/kernel/telemetry.js';
import { auditStoredKeys } from '../../scripts/admin/keys.js';
import { flattenedDecrypt, importPKCS8 } from 'jose';
import { toFlattenedJwe, type SealedEnvelope } from '../../lib/crypto/envelope.js';
import type { ReceiptEnvelope } from '../../lib/db/receipts.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import { requireAllTables } from '../../lib/kernel/config.js';
import { flattenedReceipt, gatewayFields, newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser, withoutRequestIdentity } from '../support/flow.js';
import { sealLegacyEnvelope } from '../support/legacy-envelope.js';
import { captureLogs, type LogCapture } from '../support/logs.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { receiptTableKey } from '../../lib/db/receipts.js';

/**
 * The device path (issue 14): a key pair made outside the service, only its public half imported,
 * registered like a generated one, receipts paid on both gateways sealed for it, and opened with the
 * private key the service never stored — by the server's decrypt endpoints and by jose.
 */

interface Data<T> {
  success: true;
  data: T;
}
/** Either answer, loosely typed: each test checks the status before reading the one it expects. */
interface ErrorBody {
  error: { code: string; message: string; details?: { fields?: { field: string; message: string }[] } };
}
interface ImportedKey {
  keyId: string;
  publicKey: string;
  algorithm: string;
}

interface DeviceKey {
  type: 'P-256' | 'RSA';
  publicKey: KeyObject;
  privateKey: KeyObject;
  spki: string;
  pkcs8: string;
}

function deviceKey(type: DeviceKey['type']): DeviceKey {
  const { publicKey, privateKey } =
    type === 'P-256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('rsa', { modulusLength: 3072 });
  return {
    type,
    publicKey,
    privateKey,
    spki: publicKey.export({ type: 'spki', format: 'der' }).toString('base64'),
    pkcs8: privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64'),
  };
}

const algorithmOf = (key: DeviceKey) => (key.type === 'P-256' ? 'ECDH-ES+A256KW' : 'RSA-OAEP-256');

const base64url = (value: bigint): string => {
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex').toString('base64url');
};

let reviewModulus: bigint | undefined;

/**
 * The keys the second review imported (issue 20), as public JWKs over a real 4096-bit modulus: each
 * was accepted, and the first made every merchant's payment for the card answer 500.
 */
function reviewKeys(): { name: string; jwk: { kty: 'RSA'; n: string; e: string }; problem: string }[] {
  // One 4096-bit key pair for the file: each takes a second or more of CPU to generate.
  reviewModulus ??= BigInt(
    `0x${Buffer.from(
      generateKeyPairSync('rsa', { modulusLength: 4096 }).publicKey.export({ format: 'jwk' }).n!,
      'base64url',
    ).toString('hex')}`,
  );
  const modulus = reviewModulus;
  const rsa = (e: bigint, m = modulus) => ({ kty: 'RSA' as const, n: base64url(m), e: base64url(e) });
  return [
    { name: 'e = 2^65+1, 4096 bits', jwk: rsa(2n ** 65n + 1n), problem: 'exponent must be 65537' },
    { name: 'e >= n', jwk: rsa(modulus + 2n), problem: 'exponent must be 65537' },
    { name: 'e = 1', jwk: rsa(1n), problem: 'exponent must be 65537, not 1' },
    { name: 'even e', jwk: rsa(65536n), problem: 'exponent must be 65537, not 65536' },
    { name: 'even modulus', jwk: rsa(65537n, modulus - 1n), problem: 'RSA modulus is even' },
  ];
}

/** A P-256 public key as a SubjectPublicKeyInfo with its point compressed (33 bytes, 02/03 prefix). */
function compressedSpki(key: KeyObject): string {
  const { x, y } = key.export({ format: 'jwk' });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(x!, 'base64url'), Buffer.from(y!, 'base64url')]);
  const compressed = ECDH.convertKey(point, 'prime256v1', undefined, undefined, 'compressed') as Buffer;
  // SEQUENCE { AlgorithmIdentifier { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) point }
  const prefix = Buffer.from('3039301306072a8648ce3d020106082a8648ce3d030107032200', 'hex');
  return Buffer.concat([prefix, compressed]).toString('base64');
}

describe('device keys: imported public keys, P-256 envelopes', () => {
  let stack: TestStack;
  let logs: LogCapture;
  let merchant: { apiKey: string; clientId: string };
  let issuer: { apiKey: string; clientId: string };
  let otherIssuer: { apiKey: string; clientId: string };

  beforeAll(async () => {
    logs = captureLogs();
    stack = await startTestStack();
    merchant = await stack.apiKey(['merchant']);
    issuer = await stack.apiKey(['issuer']);
    otherIssuer = await stack.apiKey(['issuer']);
  });

  afterAll(async () => {
    await stack?.close();
    logs.restore();
  });

  const importKey = (publicKey: unknown, apiKey = issuer.apiKey) =>
    stack.request<Data<ImportedKey> & ErrorBody>('POST', '/api/v1/onboarding/keys', {
      apiKey,
      body: { publicKey },
    });

  /** A 400 whose field details name the problem, for the case `name`. */
  const expectImportRefused = async (name: string, publicKey: unknown, problem: string) => {
    const reply = await importKey(publicKey);
    expect({ name, status: reply.status, code: reply.json.error?.code }).toEqual({
      name,
      status: 400,
      code: 'INVALID_REQUEST',
    });
    expect({ name, message: reply.json.error.details?.fields?.[0]?.message }).toEqual({
      name,
      message: expect.stringContaining(problem),
    });
  };

  const register = (keyId: string, publicKey: string, hashedPan = newHashedPan(), apiKey = issuer.apiKey) =>
    stack.request<Data<{ userId: string }> & ErrorBody>('POST', '/api/v1/onboarding/register', {
      apiKey,
      body: { hashedPan, publicKey, keyId },
    });

  /** Imports the device's public key (as SPKI or JWK) and registers a card with it. */
  const onboardDevice = async (key: DeviceKey, form: 'spki' | 'jwk' = 'spki', hashedPan = newHashedPan()) => {
    const imported = await importKey(form === 'spki' ? key.spki : key.publicKey.export({ format: 'jwk' }));
    expect(imported.status).toBe(201);
    expect(imported.json.data).toEqual({
      keyId: expect.any(String),
      publicKey: key.spki,
      algorithm: algorithmOf(key),
    });
    const registered = await register(imported.json.data.keyId, key.spki, hashedPan);
    expect(registered.status).toBe(200);
    return { userId: registered.json.data.userId, keyId: imported.json.data.keyId, hashedPan };
  };

  const stored = async (receiptId: string): Promise<ReceiptEnvelope> => {
    const record = await stack.deps.repos.receipts.get({ merchantClientId: merchant.clientId, receiptId });
    if (!record) throw new Error(`no receipt ${receiptId}`);
    return record.envelope;
  };

  /** jose, knowing nothing of this service, opens the envelope as a flattened JWE. */
  const openWithJose = async (envelope: SealedEnvelope, key: DeviceKey): Promise<unknown> => {
    const joseKey = await importPKCS8(
      key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      algorithmOf(key),
    );
    const { plaintext } = await flattenedDecrypt(toFlattenedJwe(envelope), joseKey);
    return JSON.parse(Buffer.from(plaintext).toString('utf8')) as unknown;
  };

  const decryptEnvelope = (
    envelope: unknown,
    accessTokenId: string,
    privateKey: string,
    apiKey = issuer.apiKey,
  ) =>
    stack.request<Data<DigitalReceipt> & ErrorBody>('POST', '/api/v1/receipts/decrypt', {
      apiKey,
      body: { envelope, accessTokenId, privateKey },
    });

  const pay = async (gateway: 'gateway_a' | 'gateway_b', hashedPan: string) => {
    const body = flattenedReceipt({ recipientHashedPan: hashedPan });
    const extra = gatewayFields(gateway, body);
    const created = await stack.request<Data<{ paymentId: string }>>(
      'POST',
      `/api/v1/payments/${gateway}/create`,
      {
        apiKey: merchant.apiKey,
        body: { ...body, ...extra },
      },
    );
    expect(created.status).toBe(200);
    return { paymentId: created.json.data.paymentId, receiptId: body.receiptId as string };
  };

  const encrypt = async (hashedPan: string, receipt = sampleReceipt()) => {
    const reply = await stack.request<Data<ReceiptEnvelope>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant.apiKey,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'device@example.com' },
        recipientHashedPan: hashedPan,
      },
    });
    expect(reply.status).toBe(200);
    return { receipt, envelope: reply.json.data };
  };

  describe.each(['P-256', 'RSA'] as const)('an imported %s key', (type) => {
    const key = deviceKey(type);
    let user: Awaited<ReturnType<typeof onboardDevice>>;

    beforeAll(async () => {
      user = await onboardDevice(key);
    });

    it.each(['gateway_a', 'gateway_b'] as const)(
      'receives receipts paid on %s, which the server opens with the PKCS#8 key and jose opens too',
      async (gateway) => {
        const { paymentId, receiptId } = await pay(gateway, user.hashedPan);
        const envelope = await stored(receiptId);
        expect(envelope.keyBundle.algorithm).toBe(algorithmOf(key));
        expect(envelope.keyBundle.epk !== undefined).toBe(type === 'P-256');
        expect(envelope.isEscrowed).toBe(false);
        const token = await grantToken(stack, issuer.apiKey, user);
        const opened = await stack.request<Data<DigitalReceipt>>('POST', '/api/v1/payments/decrypt', {
          apiKey: issuer.apiKey,
          body: { paymentId, gateway, accessTokenId: token, privateKey: key.pkcs8 },
        });
        expect(opened.status).toBe(200);
        expect(opened.json.data).toMatchObject({ receiptId, summary: { total: 1548 } });
        expect(await openWithJose(envelope, key)).toEqual(opened.json.data);
      },
    );

    it('receives receipts from receipts/encrypt, answered with the per-recipient alg, and decrypts them', async () => {
      const { receipt, envelope } = await encrypt(user.hashedPan);
      expect(envelope.keyBundle).toMatchObject({ keyId: user.keyId, algorithm: algorithmOf(key) });
      const header = JSON.parse(Buffer.from(envelope.protected, 'base64url').toString()) as Record<
        string,
        unknown
      >;
      expect(header.alg).toBeUndefined();
      const token = await grantToken(stack, issuer.apiKey, user);
      const opened = await decryptEnvelope(envelope, token, key.pkcs8);
      expect(opened.status).toBe(200);
      expect(opened.json.data.receiptId).toBe(receipt.receiptId);
      expect(await openWithJose(envelope, key)).toEqual(opened.json.data);
    });

    it('refuses the wrong private key, of either type, with the uniform 403', async () => {
      const { envelope } = await encrypt(user.hashedPan);
      const expired = await grantToken(stack, issuer.apiKey, user);
      stack.clock.advance(181_000);
      const uniform = withoutRequestIdentity((await decryptEnvelope(envelope, expired, key.pkcs8)).text);
      const fresh = await grantToken(stack, issuer.apiKey, user);
      for (const wrong of [deviceKey('P-256').pkcs8, deviceKey('RSA').pkcs8]) {
        const reply = await decryptEnvelope(envelope, fresh, wrong);
        expect(reply.status).toBe(403);
        expect(withoutRequestIdentity(reply.text)).toEqual(uniform);
      }
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' })
        .privateKey.export({ type: 'pkcs8', format: 'der' })
        .toString('base64');
      const reply = await decryptEnvelope(envelope, fresh, p384);
      expect(withoutRequestIdentity(reply.text)).toEqual(uniform);
    });
  });

  it('imports a P-256 key sent as a JWK, stores only its public half and audits the import', async () => {
    const key = deviceKey('P-256');
    const user = await onboardDevice(key, 'jwk');
    const record = await stack.deps.repos.keyPairs.get(user.keyId);
    expect(record).toMatchObject({
      keyId: user.keyId,
      publicKey: key.spki,
      clientId: issuer.clientId,
      algorithm: 'ECDH-ES+A256KW',
      origin: 'imported',
      userId: user.userId,
    });
    expect(JSON.stringify(record)).not.toContain(key.privateKey.export({ format: 'jwk' }).d);
    const audit = await stack.deps.audit.forClient(issuer.clientId, 200);
    expect(audit.some((entry) => entry.action === 'key.import' && entry.keyId === user.keyId)).toBe(true);
  });

  it('hands an escrowed receipt, new or stored before, to a P-256 user who claims it', async () => {
    const hashedPan = newHashedPan();
    const fresh = await encrypt(hashedPan);
    const older = await encrypt(hashedPan);
    expect([fresh.envelope.isEscrowed, fresh.envelope.keyBundle.algorithm]).toEqual([true, 'RSA-OAEP-256']);
    // The second one as it was stored before per-recipient algorithms: alg in its protected header.
    const legacy = sealLegacyEnvelope(
      Buffer.from(JSON.stringify(older.receipt), 'utf8'),
      older.envelope,
      await stack.deps.escrow.publicKey(),
      stack.deps.escrow.keyId,
    );
    const record = await stack.deps.repos.receipts.get({
      merchantClientId: merchant.clientId,
      receiptId: older.receipt.receiptId,
    });
    await stack.deps.dynamo.doc.send(
      new PutCommand({
        TableName: requireAllTables(stack.config).receipts,
        Item: { ...record, ...receiptTableKey(record!), envelope: { ...record!.envelope, ...legacy } },
      }),
    );

    const key = deviceKey('P-256');
    const user = await onboardDevice(key, 'spki', hashedPan);
    const { total, currency } = fresh.receipt.summary;
    const claimed = await stack.request<Data<{ released: number }>>('POST', '/api/v1/receipts/claim', {
      apiKey: issuer.apiKey,
      body: {
        userId: user.userId,
        transactions: [{ amount: total, currency, transactionDate: fresh.receipt.transaction.datetime }],
      },
    });
    expect(claimed.status).toBe(200);
    expect(claimed.json.data.released).toBe(2);

    const token = await grantToken(stack, issuer.apiKey, user);
    for (const [name, source, protectedKept] of [
      ['new layout: re-wrapped', fresh, true],
      ['legacy: re-sealed', { ...older, envelope: { ...older.envelope, ...legacy } }, false],
    ] as const) {
      const envelope = await stored(source.receipt.receiptId);
      expect({ name, algorithm: envelope.keyBundle.algorithm, escrowed: envelope.isEscrowed }).toEqual({
        name,
        algorithm: 'ECDH-ES+A256KW',
        escrowed: false,
      });
      expect({ name, kept: envelope.protected === source.envelope.protected }).toEqual({
        name,
        kept: protectedKept,
      });
      const opened = await decryptEnvelope(envelope, token, key.pkcs8);
      expect({ name, status: opened.status }).toEqual({ name, status: 200 });
      expect(opened.json.data).toEqual(JSON.parse(JSON.stringify(source.receipt)));
      expect(await openWithJose(envelope, key)).toEqual(opened.json.data);
    }
  });

  it('rotates a generated-key user to an imported P-256 key: later receipts are sealed for it', async () => {
    const user = await onboardUser(stack, issuer.apiKey);
    const key = deviceKey('P-256');
    const imported = await importKey(key.spki);
    // Another issuer cannot move its user onto our key.
    const foreignUser = await onboardUser(stack, otherIssuer.apiKey);
    const stolen = await stack.request<ErrorBody>('POST', `/api/v1/users/${foreignUser.userId}/key`, {
      apiKey: otherIssuer.apiKey,
      body: { keyId: imported.json.data.keyId },
    });
    expect([stolen.status, stolen.json.error.code]).toEqual([404, 'KEY_NOT_FOUND']);
    const rotated = await stack.request('POST', `/api/v1/users/${user.userId}/key`, {
      apiKey: issuer.apiKey,
      body: { keyId: imported.json.data.keyId },
    });
    expect(rotated.status).toBe(200);
    const { envelope } = await encrypt(user.hashedPan);
    expect(envelope.keyBundle).toMatchObject({
      keyId: imported.json.data.keyId,
      algorithm: 'ECDH-ES+A256KW',
    });
    const token = await grantToken(stack, issuer.apiKey, {
      userId: user.userId,
      keyId: imported.json.data.keyId,
    });
    expect((await decryptEnvelope(envelope, token, key.pkcs8)).status).toBe(200);
    expect((await decryptEnvelope(envelope, token, user.privateKey)).status).toBe(403);
  });

  describe('keys that cannot hurt others (issue 20)', () => {
    it('refuses each key the review imported with a 400 naming the problem (all were stored before)', async () => {
      for (const { name, jwk, problem } of reviewKeys()) {
        await expectImportRefused(name, jwk, problem);
        // The same key as a base64 SPKI is refused the same way.
        const spki = createPublicKey({ key: jwk, format: 'jwk' })
          .export({ type: 'spki', format: 'der' })
          .toString('base64');
        await expectImportRefused(`${name} (SPKI)`, spki, problem);
      }
    });

    it('stores a compressed P-256 key as the canonical uncompressed SPKI, which then works server-side', async () => {
      // Before: stored as sent, so a server-side decrypt never matched the user's key (the LOW).
      const key = deviceKey('P-256');
      const compressed = compressedSpki(key.publicKey);
      expect(compressed).not.toBe(key.spki);
      const imported = await importKey(compressed);
      expect(imported.status).toBe(201);
      expect(imported.json.data.publicKey).toBe(key.spki);
      expect((await stack.deps.repos.keyPairs.get(imported.json.data.keyId))?.publicKey).toBe(key.spki);
      // Registering with either spelling of the key matches what was stored.
      const hashedPan = newHashedPan();
      const registered = await register(imported.json.data.keyId, compressed, hashedPan);
      expect(registered.status).toBe(200);
      const user = { userId: registered.json.data.userId, keyId: imported.json.data.keyId };
      expect((await stack.deps.repos.users.getById(user.userId))?.publicKey).toBe(key.spki);
      const { receiptId } = await pay('gateway_a', hashedPan);
      const token = await grantToken(stack, issuer.apiKey, user);
      const opened = await stack.request<Data<DigitalReceipt>>('POST', '/api/v1/receipts/decrypt', {
        apiKey: issuer.apiKey,
        body: { envelope: await stored(receiptId), accessTokenId: token, privateKey: key.pkcs8 },
      });
      expect([opened.status, opened.json.data.receiptId]).toEqual([200, receiptId]);
    });

    it.each(['gateway_a', 'gateway_b'] as const)(
      "escrows the receipt when the recipient's stored key cannot be sealed to, and the payment on %s succeeds",
      async (gateway) => {
        const telemetry = stack.deps.telemetry as LogTelemetry;
        const user = await onboardUser(stack, issuer.apiKey);
        // A key that could never be imported now, forced into the table encryption reads (the user and
        // its card guard): before, every payment for the card answered 500 ENCRYPTION_ERROR.
        const [unusable] = reviewKeys();
        const spki = createPublicKey({ key: unusable!.jwk, format: 'jwk' })
          .export({ type: 'spki', format: 'der' })
          .toString('base64');
        const tables = requireAllTables(stack.config);
        const record = (await stack.deps.repos.users.getById(user.userId))!;
        for (const pk of [`USER#${user.userId}`, `CARD#${record.cardTag}`]) {
          await stack.deps.dynamo.doc.send(
            new UpdateCommand({
              TableName: tables.users,
              Key: { pk },
              UpdateExpression: 'SET publicKey = :key',
              ExpressionAttributeValues: { ':key': spki },
            }),
          );
        }
        const before = telemetry.total('RecipientSealFailures');
        const body = flattenedReceipt({ recipientHashedPan: user.hashedPan });
        const created = await stack.request<Data<{ receiptMetadata: { isEscrowed: boolean } }>>(
          'POST',
          `/api/v1/payments/${gateway}/create`,
          { apiKey: merchant.apiKey, body: { ...body, ...gatewayFields(gateway, body) } },
        );
        expect(created.status).toBe(200);
        expect(created.json.data.receiptMetadata.isEscrowed).toBe(true);
        const envelope = await stored(body.receiptId as string);
        expect([envelope.isEscrowed, envelope.keyId]).toEqual([true, stack.deps.escrow.keyId]);
        expect(telemetry.total('RecipientSealFailures')).toBe(before + 1);
        const audit = await stack.deps.audit.forClient(merchant.clientId, 50);
        expect(
          audit.find((entry) => entry.action === 'receipt.encrypt' && entry.receiptId === body.receiptId),
        ).toMatchObject({
          outcome: 'failure',
          userId: user.userId,
          reason: expect.stringContaining('escrowed'),
        });
        // The operator's audit lists the forced key, naming why.
        const report = await auditStoredKeys({ doc: stack.deps.dynamo.doc, tables });
        expect(report.findings).toContainEqual(
          expect.objectContaining({
            source: 'user',
            userId: user.userId,
            problem: expect.stringContaining('exponent must be 65537'),
          }),
        );
      },
    );
  });

  it("does not let another issuer register with this client's imported keyId", async () => {
    const key = deviceKey('P-256');
    const imported = await importKey(key.spki);
    const foreign = await register(imported.json.data.keyId, key.spki, newHashedPan(), otherIssuer.apiKey);
    expect([foreign.status, foreign.json.error.code]).toEqual([404, 'KEY_NOT_FOUND']);
    // Nor register it with another public key than the one imported.
    const swapped = await register(imported.json.data.keyId, deviceKey('P-256').spki);
    expect([swapped.status, swapped.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    // The owner still can.
    expect((await register(imported.json.data.keyId, key.spki)).status).toBe(200);
  });

  it('refuses keys it cannot use with a 400 naming the problem, and merchants may not import', async () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey;
    const rsa1024 = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    const p256 = deviceKey('P-256');
    const cases: [string, unknown, string][] = [
      ['P-384 SPKI', p384.export({ type: 'spki', format: 'der' }).toString('base64'), 'is not P-256'],
      ['P-384 JWK', p384.export({ format: 'jwk' }), 'EC curve P-384 is not P-256'],
      ['RSA-1024', rsa1024.export({ type: 'spki', format: 'der' }).toString('base64'), '1024 bits'],
      ['private JWK', p256.privateKey.export({ format: 'jwk' }), 'private member "d"'],
      ['PKCS#8 private key', p256.pkcs8, 'not a DER SubjectPublicKeyInfo'],
      ['garbage', 'bm90IGEga2V5', 'not a DER SubjectPublicKeyInfo'],
      ['not base64', 'not a key!', 'neither PEM nor canonical base64'],
      ['symmetric JWK', { kty: 'oct', k: 'c2VjcmV0' }, 'private member "k"'],
      [
        'Ed25519 JWK',
        { kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' },
        'neither RSA nor EC',
      ],
    ];
    for (const [name, publicKey, problem] of cases) await expectImportRefused(name, publicKey, problem);
    for (const body of [{}, { publicKey: 42 }, { publicKey: p256.spki, privateKey: p256.pkcs8 }]) {
      const reply = await stack.request<ErrorBody>('POST', '/api/v1/onboarding/keys', {
        apiKey: issuer.apiKey,
        body,
      });
      expect(reply.status).toBe(400);
    }
    expect((await importKey(p256.spki, merchant.apiKey)).status).toBe(403);
  });
});
