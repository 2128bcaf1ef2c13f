import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { registerSigningKeyBody, signingKeySchema } from '../../../lib/merchants/schemas.js';

export const registerSigningKeyRoute = defineRoute({
  name: 'register-signing-key',
  method: 'POST',
  path: '/api/v1/merchants/signing-keys',
  entry: 'functions/merchants/register-signing-key/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Register a receipt signing key',
    description:
      'Registers the public half of a key the merchant signs receipts with (Receipt-Signature): Ed25519 or ' +
      "P-256 as a JWK. Its kid is the key's RFC 7638 thumbprint. The key belongs to this merchant client: no " +
      'other client can sign with it or register it. Registering the same key again answers the same key. At ' +
      'most 20 active keys per merchant client.',
    details:
      'A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant) `{ ' +
      'publicKey }`, a public JWK: `{ kty: "OKP", crv: "Ed25519", x }` or `{ kty: "EC", crv: "P-256", ' +
      'x, y }`; `alg` (`EdDSA`/`ES256`), `use: "sig"`, `key_ops: ["verify"]`, `ext` and a `kid` equal ' +
      "to its thumbprint may come along (what WebCrypto's export gives). → `201 { kid, alg, publicKey, " +
      'status: "active", createdAt, revokedAt: null }`. The `kid` is the key\'s RFC 7638 thumbprint ' +
      '(SHA-256, base64url, 43 characters): the service names it, from the key itself. Refused with ' +
      '`400 INVALID_REQUEST`, the member named in `details.fields`: private members (`d` and the like: ' +
      'make a new key, this one has left the till), a key type other than OKP/EC, a curve other than ' +
      'Ed25519/P-256 (X25519, Ed448, P-384, secp256k1…), coordinates that are not 32 bytes of unpadded ' +
      'base64url, a point not on P-256, an Ed25519 point of small or mixed order (weak keys), another ' +
      '`alg`, `use` or `key_ops`, a `kid` that is not the thumbprint, an unknown member. The same key ' +
      'again from its owner answers the same key; from another merchant client `409` (a key belongs to ' +
      'one merchant client); a revoked key `409`. At most 20 active keys per client.',
  },
  request: {
    body: { description: 'The public key.', schema: registerSigningKeyBody },
  },
  response: { description: 'The key.', schema: signingKeySchema, enveloped: true, status: 201 },
  errors: {
    400: {
      description:
        'The key is refused, the problem named in details.fields: private members (d), a key type or curve ' +
        'other than Ed25519 and P-256, a point not on its curve, a weak (small- or mixed-order) Ed25519 key, a ' +
        'kid other than its thumbprint.',
    },
    409: {
      description:
        'The key is registered by another merchant client, or was revoked; or this client has 20 active keys.',
      codes: ['CONFLICT'],
    },
  },
});
