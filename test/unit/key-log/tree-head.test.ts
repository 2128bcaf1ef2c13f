import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from '@jest/globals';
import { GetPublicKeyCommand, KMSClient, SignCommand } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { signTreeHead } from '../../../lib/key-log/tree-head.js';
import { verifyTreeHeadWithJose as verifyTreeHead } from '../../support/tree-head.js';
import { KmsLogSigningKey } from '../../../lib/wiring/kms-log-key.js';
import { LocalLogSigningKey } from '../../../local/log-signing-key.js';

/**
 * Signed tree heads through the KMS adapter. KMS cannot run here, so aws-sdk-client-mock answers as
 * KMS does: the public key as SPKI DER, and a DER ECDSA signature made by a real P-256 key.
 */
const kms = mockClient(KMSClient);
afterEach(() => {
  kms.reset();
});

function kmsWith() {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  kms.on(GetPublicKeyCommand).resolves({
    KeySpec: 'ECC_NIST_P256',
    PublicKey: new Uint8Array(publicKey.export({ format: 'der', type: 'spki' })),
  });
  kms.on(SignCommand).callsFake((input: { Message: Uint8Array; SigningAlgorithm: string }) => {
    expect(input.SigningAlgorithm).toBe('ECDSA_SHA_256');
    return {
      Signature: new Uint8Array(sign('sha256', input.Message, { key: privateKey, dsaEncoding: 'der' })),
    };
  });
  return new KmsLogSigningKey(new KMSClient({ region: 'eu-west-1' }), 'alias/key-log');
}

const head = { treeSize: 7, rootHash: Buffer.alloc(32, 7).toString('base64'), timestamp: 1_795_000_000_000 };

describe('signed tree heads', () => {
  it('verify with jose under the public JWK the adapter serves', async () => {
    const key = kmsWith();
    const jws = await signTreeHead(key, head);
    const jwk = await key.publicJwk();
    expect(jwk).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(jwk).not.toHaveProperty('d');
    expect(await verifyTreeHead(jws, jwk)).toEqual(head);
  });

  it('refuse a head whose size or root was changed, or signed by another key', async () => {
    const key = kmsWith();
    const jws = await signTreeHead(key, head);
    const jwk = await key.publicJwk();
    const [header, , signature] = jws.split('.');
    const forged = Buffer.from(JSON.stringify({ ...head, treeSize: 6 })).toString('base64url');
    expect(await verifyTreeHead(`${header}.${forged}.${signature}`, jwk)).toBeNull();
    const other = kmsWith();
    expect(await verifyTreeHead(await signTreeHead(other, head), jwk)).toBeNull();
  });
});

describe('the local log signing key file', () => {
  it('signs heads jose verifies, and a second start reads the same key (0600)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'key-log-'));
    try {
      const key = await LocalLogSigningKey.loadOrCreate(dir);
      const again = await LocalLogSigningKey.loadOrCreate(dir);
      expect(await again.publicJwk()).toEqual(await key.publicJwk());
      expect((await stat(join(dir, 'log-signing-key.pem'))).mode & 0o777).toBe(0o600);
      expect(await verifyTreeHead(await signTreeHead(key, head), await again.publicJwk())).toEqual(head);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
