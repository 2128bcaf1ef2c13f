import type { JWK } from 'jose';

/**
 * The log signing key (a KMS ECC_NIST_P256 SIGN_VERIFY key in AWS, a key file locally): it signs the
 * JWS signing input and gives the JOSE signature (r ‖ s, 64 bytes); the private half never leaves it.
 */
export interface LogSigningKey {
  /** The public JWK, with its kid (the RFC 7638 thumbprint), `alg: ES256`, `use: sig`. */
  publicJwk(): Promise<JWK>;
  signEs256(signingInput: Uint8Array): Promise<Uint8Array>;
}
