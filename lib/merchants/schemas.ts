import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { dateTime } from '../kernel/fields.js';

/*
 * Merchant signing keys as the endpoints take and answer them (DECISIONS, Round 3, "Merchant-signed
 * receipts"; docs/API.md, "Merchant-signed receipts").
 */

/** A key's id: its RFC 7638 JWK thumbprint, SHA-256 in base64url (43 characters). */
export const kidSchema = lazySchema(() =>
  z
    .string()
    .regex(
      /^[A-Za-z0-9_-]{43}$/,
      "must be a signing key's kid (its RFC 7638 thumbprint, 43 base64url characters)",
    )
    .meta({
      description:
        "The signing key's RFC 7638 JWK thumbprint (SHA-256, base64url): assigned by the service from the key " +
        'itself, so one public key has one kid wherever it is seen.',
      examples: ['NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs'],
    }),
);

const base64url = lazySchema(() => z.string().max(128));

export const signingPublicJwkSchema = lazySchema(() =>
  z
    .union([
      z.strictObject({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: base64url }),
      z.strictObject({ kty: z.literal('EC'), crv: z.literal('P-256'), x: base64url, y: base64url }),
    ])
    .meta({
      id: 'SigningPublicJwk',
      description: 'A merchant signing key, public members only: Ed25519 (OKP) or P-256 (EC).',
    }),
);

export const registerSigningKeyBody = lazySchema(() =>
  z
    .strictObject({
      publicKey: z.record(z.string(), z.unknown()).meta({
        description:
          'The public key as a JWK (RFC 7517): `{ kty: "OKP", crv: "Ed25519", x }` or `{ kty: "EC", crv: "P-256", ' +
          'x, y }`. `alg` (EdDSA or ES256), `use: "sig"`, `key_ops` with "verify", `ext` and a `kid` equal to the ' +
          "key's thumbprint may come along. Refused, each by name: private members (`d`), other key types and " +
          'curves, a point not on its curve, and weak Ed25519 keys (small or mixed order).',
      }),
      proof: z
        .string()
        .max(4096)
        .optional()
        .meta({
          description:
            'Required: proof of possession, a compact JWS (attached payload) by this very key (`alg` EdDSA or ES256, ' +
            'ES256 in low-S form) over the RFC 8785 JSON of `{ "action": "register", "clientId": <your client id>, ' +
            '"kid": <the key\'s thumbprint>, "nonce": <from POST /api/v1/merchants/signing-keys/challenges> }`. ' +
            'The nonce is single use. Without it the registration is 400 naming `proof` (the SDK: signKeyProof).',
        }),
    })
    .meta({ id: 'RegisterSigningKeyRequest' }),
);

export const keyChallengeSchema = lazySchema(() =>
  z
    .strictObject({
      nonce: z.string().meta({ description: '32 random bytes, base64url: sign it into one proof, once.' }),
      expiresAt: dateTime.meta({ description: 'Five minutes from now: a proof with it is refused after.' }),
      clientId: z.string().meta({ description: 'Your merchant client id: the proof names it.' }),
    })
    .meta({ id: 'SigningKeyChallenge' }),
);

/** The header that proves a key or policy change with one of the merchant's active keys. */
export const keyChangeProofHeader = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(4096)
    .meta({
      description:
        'Required once this merchant client has an active signing key: a compact JWS (attached payload) by one of ' +
        'its active keys (`kid` in the protected header; ES256 in low-S form) over the RFC 8785 JSON of ' +
        '`{ "action", "clientId", "target", "nonce" }`: action `add-key` (target the new kid), `revoke-key` (the ' +
        'revoked kid) or `signing-policy` (`requireSignatures=false`); the nonce from POST ' +
        '/api/v1/merchants/signing-keys/challenges, single use. Missing or wrong is 403 KEY_CHANGE_PROOF_REQUIRED ' +
        'naming what (details.reason). The SDK: signKeyProof.',
    }),
);

export const signingKeySchema = lazySchema(() =>
  z
    .strictObject({
      kid: kidSchema,
      alg: z.enum(['EdDSA', 'ES256']).meta({ description: 'The JWS alg its signatures carry.' }),
      publicKey: signingPublicJwkSchema,
      status: z.enum(['active', 'revoked']),
      createdAt: dateTime,
      revokedAt: dateTime
        .nullable()
        .meta({ description: 'When it was revoked: it signs nothing new from then on. Null while active.' }),
    })
    .meta({
      id: 'SigningKey',
      description:
        "A merchant's receipt signing key. Revoked keys stay readable: receipts signed earlier name them.",
    }),
);

export const signingKeyListSchema = lazySchema(() =>
  z
    .strictObject({
      signingKeys: z.array(signingKeySchema).meta({ description: 'Oldest first, revoked ones included.' }),
      requireSignatures: z.boolean().meta({
        description: 'Whether this merchant client refuses its own unsigned create and encrypt requests.',
      }),
    })
    .meta({ id: 'SigningKeyList' }),
);

export const signingPolicyBody = lazySchema(() =>
  z
    .strictObject({
      requireSignatures: z.boolean().meta({
        description:
          'true: every payments/{gateway}/create, receipts/encrypt and refund request of this merchant client ' +
          'must carry Receipt-Signature (an unsigned one is 400 invalid_signature). Needs an active signing key.',
      }),
    })
    .meta({ id: 'SigningPolicyRequest' }),
);

export const signingPolicySchema = lazySchema(() =>
  z.strictObject({ requireSignatures: z.boolean(), updatedAt: dateTime }).meta({ id: 'SigningPolicy' }),
);

/** The request header: its form is checked by the use case, so a bad one is invalid_signature, not a 400 of the header. */
export const receiptSignatureHeader = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(4096)
    .meta({
      description:
        'Optional (required when the merchant client requires signatures): a JWS (RFC 7515), compact form with ' +
        'the payload detached, `<protected>..<signature>`, whose protected header has `alg` (EdDSA or ES256) and ' +
        '`kid` (a registered, unrevoked signing key of this merchant client), over the RFC 8785 canonical JSON ' +
        'of the DigitalReceipt the service will seal. Checked before anything is charged or stored; anything ' +
        'wrong is 400 invalid_signature naming it. docs/ENVELOPE.md, "The merchant\'s signature".',
    }),
);

export const merchantJwksSchema = lazySchema(() =>
  z
    .strictObject({
      keys: z
        .array(
          z.union([
            z.strictObject({
              kty: z.literal('OKP'),
              crv: z.literal('Ed25519'),
              x: base64url,
              kid: kidSchema,
              alg: z.literal('EdDSA'),
              use: z.literal('sig'),
            }),
            z.strictObject({
              kty: z.literal('EC'),
              crv: z.literal('P-256'),
              x: base64url,
              y: base64url,
              kid: kidSchema,
              alg: z.literal('ES256'),
              use: z.literal('sig'),
            }),
          ]),
        )
        .meta({
          description: 'The active keys, oldest first; revoked keys are left out (the key log keeps them).',
        }),
    })
    .meta({
      id: 'MerchantJwks',
      description: "A merchant client's active signing keys as a JWK Set (RFC 7517 §5).",
    }),
);
