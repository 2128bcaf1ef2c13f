/**
 * The log signing key in AWS: a KMS ECC_NIST_P256 SIGN_VERIFY key. KMS answers a DER signature;
 * JWS wants r ‖ s, which @noble/curves converts.
 */
import { createPublicKey } from 'node:crypto';
import { GetPublicKeyCommand, SignCommand, type KMSClient } from '@aws-sdk/client-kms';
import { p256 } from '@noble/curves/nist.js';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { LogSigningKey } from '../key-log/tree-head.js';

export class KmsLogSigningKey implements LogSigningKey {
  private jwk: Promise<JWK> | undefined;

  constructor(
    private readonly kms: KMSClient,
    private readonly keyId: string,
  ) {}

  publicJwk(): Promise<JWK> {
    this.jwk ??= this.load().catch((error: unknown) => {
      this.jwk = undefined;
      throw error;
    });
    return this.jwk;
  }

  private async load(): Promise<JWK> {
    const result = await this.kms.send(new GetPublicKeyCommand({ KeyId: this.keyId }));
    if (result.KeySpec !== 'ECC_NIST_P256' || !result.PublicKey)
      throw new Error('The log signing key is not an ECC_NIST_P256 key');
    const exported = createPublicKey({
      key: Buffer.from(result.PublicKey),
      format: 'der',
      type: 'spki',
    }).export({
      format: 'jwk',
    });
    const jwk: JWK = { kty: 'EC', crv: 'P-256', x: exported.x!, y: exported.y! };
    return { ...jwk, kid: await calculateJwkThumbprint(jwk, 'sha256'), alg: 'ES256', use: 'sig' };
  }

  async signEs256(signingInput: Uint8Array): Promise<Uint8Array> {
    const result = await this.kms.send(
      new SignCommand({
        KeyId: this.keyId,
        Message: signingInput,
        MessageType: 'RAW',
        SigningAlgorithm: 'ECDSA_SHA_256',
      }),
    );
    if (!result.Signature) throw new Error('KMS returned no signature');
    return p256.Signature.fromBytes(result.Signature, 'der').toBytes('compact');
  }
}
