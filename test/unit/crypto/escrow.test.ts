import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { constants, privateDecrypt } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DecryptCommand,
  DescribeKeyCommand,
  GetPublicKeyCommand,
  InvalidCiphertextException,
  KMSClient,
  KMSInternalException,
} from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { openEnvelopeWith, sealEnvelope, unwrapContentKey } from '../../../lib/crypto/envelope.js';
import type { EscrowKey } from '../../../lib/crypto/escrow.js';
import { KeyUnavailableError } from '../../../lib/crypto/errors.js';
import { KmsEscrowKey } from '../../../lib/wiring/kms-escrow.js';
import { LocalEscrowKey } from '../../../local/escrow-key.js';
import { bound, expectDecryptionRejection, flipBit, testKeyPair, type TestKeyPair } from './support.js';

const plaintext = Buffer.from('{"total":1099}');
const KEY_ARN = 'arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab';

const publicKeyResponse = (overrides: Record<string, unknown> = {}) => ({
  KeyId: KEY_ARN,
  KeySpec: 'RSA_2048' as const,
  KeyUsage: 'ENCRYPT_DECRYPT' as const,
  EncryptionAlgorithms: ['RSAES_OAEP_SHA_1' as const, 'RSAES_OAEP_SHA_256' as const],
  PublicKey: new Uint8Array(Buffer.from(kmsPublicKeyText, 'base64')),
  ...overrides,
});
let kmsPublicKeyText = '';

async function sealFor(escrow: EscrowKey, body: Buffer = plaintext) {
  return sealEnvelope(body, bound, { keyId: escrow.keyId, publicKey: await escrow.publicKey() });
}

describe('KmsEscrowKey', () => {
  const client = new KMSClient({ region: 'eu-west-1' });
  const kms = mockClient(client);
  let kmsKey: TestKeyPair;

  beforeAll(async () => {
    kmsKey = await testKeyPair();
    kmsPublicKeyText = kmsKey.publicKeyText;
  });

  beforeEach(() => {
    kms.reset();
    kms.on(GetPublicKeyCommand).resolves(publicKeyResponse());
    // A real RSA-OAEP-256 decrypt inside the mock, so the round trip is genuine.
    kms
      .on(DecryptCommand)
      .callsFake((input: { CiphertextBlob: Uint8Array; EncryptionAlgorithm?: string }) => {
        if (input.EncryptionAlgorithm !== 'RSAES_OAEP_SHA_256') throw new Error('wrong algorithm');
        try {
          const key = privateDecrypt(
            { key: kmsKey.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
            input.CiphertextBlob,
          );
          return {
            KeyId: KEY_ARN,
            EncryptionAlgorithm: 'RSAES_OAEP_SHA_256',
            Plaintext: new Uint8Array(key),
          };
        } catch {
          throw new InvalidCiphertextException({ message: 'invalid ciphertext', $metadata: {} });
        }
      });
    kms.on(DescribeKeyCommand).resolves({ KeyMetadata: { KeyId: KEY_ARN, KeyState: 'Enabled' } });
  });

  it('wraps locally with one GetPublicKey and unwraps through Decrypt with RSAES_OAEP_SHA_256', async () => {
    const escrow = new KmsEscrowKey(client, KEY_ARN);
    const envelopes = await Promise.all(Array.from({ length: 25 }, () => sealFor(escrow)));
    expect(kms.commandCalls(GetPublicKeyCommand)).toHaveLength(1);
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(0);
    expect(envelopes[0]?.keyId).toBe(KEY_ARN);

    for (const envelope of envelopes.slice(0, 3)) {
      await expect(openEnvelopeWith(envelope, (key) => escrow.unwrap(key))).resolves.toEqual(plaintext);
    }
    const decrypts = kms.commandCalls(DecryptCommand);
    expect(decrypts).toHaveLength(3);
    for (const call of decrypts) {
      expect(call.args[0].input).toMatchObject({ KeyId: KEY_ARN, EncryptionAlgorithm: 'RSAES_OAEP_SHA_256' });
    }
    expect(kms.commandCalls(GetPublicKeyCommand)).toHaveLength(1);
  });

  it('releases the content key of a genuine envelope only', async () => {
    const escrow = new KmsEscrowKey(client, KEY_ARN);
    const envelope = await sealFor(escrow);
    await expect(unwrapContentKey(envelope, (key) => escrow.unwrap(key), 256)).resolves.toHaveLength(32);
    const tampered = {
      ...envelope,
      keyBundle: { ...envelope.keyBundle, encryptedAesKey: flipBit(envelope.keyBundle.encryptedAesKey, 77) },
    };
    const failure = await expectDecryptionRejection(() =>
      unwrapContentKey(tampered, (key) => escrow.unwrap(key)),
    );
    expect(failure.reason).toBe('kms refused the wrapped key: InvalidCiphertextException');
  });

  it('reports a KMS outage as unavailable, not as a bad envelope', async () => {
    const escrow = new KmsEscrowKey(client, KEY_ARN);
    const envelope = await sealFor(escrow);
    kms.on(DecryptCommand).rejects(new KMSInternalException({ message: 'boom', $metadata: {} }));
    await expect(openEnvelopeWith(envelope, (key) => escrow.unwrap(key))).rejects.toBeInstanceOf(
      KeyUnavailableError,
    );
  });

  it('refuses a key that is not RSA_2048 with RSAES_OAEP_SHA_256, and retries after a failure', async () => {
    kms
      .on(GetPublicKeyCommand)
      .resolvesOnce(publicKeyResponse({ KeySpec: 'RSA_4096' }))
      .resolves(publicKeyResponse());
    const escrow = new KmsEscrowKey(client, KEY_ARN);
    await expect(escrow.publicKey()).rejects.toThrow(/RSA_2048/);
    await expect(escrow.publicKey()).resolves.toMatchObject({ asymmetricKeyType: 'rsa' });
    expect(kms.commandCalls(GetPublicKeyCommand)).toHaveLength(2);

    kms.on(GetPublicKeyCommand).resolves(publicKeyResponse({ EncryptionAlgorithms: ['RSAES_OAEP_SHA_1'] }));
    await expect(new KmsEscrowKey(client, KEY_ARN).publicKey()).rejects.toThrow(/RSAES_OAEP_SHA_256/);
    kms.on(GetPublicKeyCommand).rejects(new KMSInternalException({ message: 'boom', $metadata: {} }));
    await expect(new KmsEscrowKey(client, KEY_ARN).publicKey()).rejects.toBeInstanceOf(KeyUnavailableError);
  });

  it('check() passes for an enabled key and fails for a disabled or unreachable one', async () => {
    const escrow = new KmsEscrowKey(client, KEY_ARN);
    await expect(escrow.check()).resolves.toBeUndefined();
    kms.on(DescribeKeyCommand).resolves({ KeyMetadata: { KeyId: KEY_ARN, KeyState: 'Disabled' } });
    await expect(escrow.check()).rejects.toBeInstanceOf(KeyUnavailableError);
    kms.on(DescribeKeyCommand).rejects(new Error('socket hang up'));
    await expect(escrow.check()).rejects.toBeInstanceOf(KeyUnavailableError);
  });
});

describe('LocalEscrowKey', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'escrow-key-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the key on first start (0600 PEM) and reloads the same key later', async () => {
    const dataDir = join(dir, 'data', 'nested');
    const first = await LocalEscrowKey.loadOrCreate(dataDir);
    const file = join(dataDir, 'escrow-key.pem');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(first.keyId).toMatch(/^local-escrow-[0-9a-f]{16}$/);

    const again = await LocalEscrowKey.loadOrCreate(dataDir);
    expect(again.keyId).toBe(first.keyId);
    const envelope = await sealFor(first);
    await expect(openEnvelopeWith(envelope, (key) => again.unwrap(key), 256)).resolves.toEqual(plaintext);
    await expect(again.check()).resolves.toBeUndefined();
  });

  it('keeps the folder 0700 and the key file 0600 whatever modes it finds them with', async () => {
    const dataDir = join(dir, 'loose');
    await LocalEscrowKey.loadOrCreate(dataDir);
    const file = join(dataDir, 'escrow-key.pem');
    await chmod(dataDir, 0o755);
    await chmod(file, 0o644);
    await LocalEscrowKey.loadOrCreate(dataDir);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('tightens a data folder that already exists before the first key is made', async () => {
    const dataDir = join(dir, 'existing');
    await mkdir(dataDir, { mode: 0o777 });
    await chmod(dataDir, 0o777);
    await LocalEscrowKey.loadOrCreate(dataDir);
    expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dataDir, 'escrow-key.pem'))).mode & 0o777).toBe(0o600);
  });

  it('never regenerates over a damaged key file', async () => {
    const dataDir = join(dir, 'damaged');
    await LocalEscrowKey.loadOrCreate(dataDir);
    const file = join(dataDir, 'escrow-key.pem');
    await writeFile(file, 'not a key');
    await expect(LocalEscrowKey.loadOrCreate(dataDir)).rejects.toThrow(/cannot be read/);
    expect(await readFile(file, 'utf8')).toBe('not a key');
  });

  it('in-memory keys are distinct and refuse each other’s envelopes', async () => {
    const [a, b] = await Promise.all([LocalEscrowKey.inMemory(), LocalEscrowKey.inMemory()]);
    expect(a.keyId).not.toBe(b.keyId);
    const envelope = await sealFor(a);
    await expect(openEnvelopeWith(envelope, (key) => a.unwrap(key))).resolves.toEqual(plaintext);
    await expectDecryptionRejection(() => openEnvelopeWith(envelope, (key) => b.unwrap(key)));
  });
});
