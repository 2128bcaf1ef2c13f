import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import * as z from 'zod';
import {
  keyChangeProofHeader,
  registerSigningKeyBody,
  signingKeySchema,
} from '../../../lib/merchants/schemas.js';

export const registerSigningKeyRoute = defineRoute({
  name: 'register-signing-key',
  method: 'POST',
  path: '/api/v1/merchants/signing-keys',
  entry: 'functions/merchants/register-signing-key/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: {
    ...platformTables,
    merchantKeys: 'readWrite',
    webhooks: 'read',
    webhookDeliveries: 'readWrite',
    keyLog: 'readWrite',
  },
  docs: {
    tag: 'merchants',
    summary: 'Register a receipt signing key',
    description:
      'Registers the public half of a key the merchant signs receipts with (Receipt-Signature): Ed25519 or ' +
      "P-256 as a JWK. Its kid is the key's RFC 7638 thumbprint. The key belongs to this merchant client: no " +
      'other client can sign with it or register it. Registering the same key again answers the same key. At ' +
      'most 20 active keys per merchant client. The request proves possession of the key (`proof`), and once ' +
      'this client has an active key, a Key-Change-Proof by one of them (action add-key) is needed too: the API ' +
      'key alone no longer adds keys. A key another client registered before proofs were required is taken over ' +
      'by the client that proves it holds it. Audited, and announced to your webhooks (merchant.keys.changed).',
    details:
      'A merchant may sign its receipts (Merchant-signed receipts (docs/API.md)). (merchant) `{ ' +
      'publicKey, proof }`, a public JWK: `{ kty: "OKP", crv: "Ed25519", x }` or `{ kty: "EC", crv: "P-256", ' +
      'x, y }`; `alg` (`EdDSA`/`ES256`), `use: "sig"`, `key_ops: ["verify"]`, `ext` and a `kid` equal ' +
      "to its thumbprint may come along (what WebCrypto's export gives). → `201 { kid, alg, publicKey, " +
      'status: "active", createdAt, revokedAt: null }`. The `kid` is the key\'s RFC 7638 thumbprint ' +
      '(SHA-256, base64url, 43 characters): the service names it, from the key itself. Refused with ' +
      '`400 INVALID_REQUEST`, the member named in `details.fields`: private members (`d` and the like: ' +
      'make a new key, this one has left the till), a key type other than OKP/EC, a curve other than ' +
      'Ed25519/P-256 (X25519, Ed448, P-384, secp256k1…), coordinates that are not 32 bytes of unpadded ' +
      'base64url, a point not on P-256, an Ed25519 point of small or mixed order (weak keys), another ' +
      '`alg`, `use` or `key_ops`, a `kid` that is not the thumbprint, an unknown member. The same key ' +
      'again from its owner answers the same key; from another merchant client that proved it `409` (a key ' +
      'belongs to one merchant client); a revoked key `409`. At most 20 active keys per client. `proof` is ' +
      'a compact JWS by the new key over the RFC 8785 JSON of `{ action: "register", clientId, kid, nonce }`, ' +
      'the nonce from `POST /api/v1/merchants/signing-keys/challenges`; without it `400` naming `proof`. ' +
      'Once the client has an active key, the `Key-Change-Proof` header (action `add-key`, target the new ' +
      'kid) is needed too, else `403 KEY_CHANGE_PROOF_REQUIRED` and nothing changes.',
  },
  request: {
    headers: lazySchema(() => z.object({ 'Key-Change-Proof': keyChangeProofHeader.optional() })),
    body: { description: 'The public key and its proof of possession.', schema: registerSigningKeyBody },
  },
  response: { description: 'The key.', schema: signingKeySchema, enveloped: true, status: 201 },
  errors: {
    400: {
      description:
        'The key is refused, the problem named in details.fields: private members (d), a key type or curve ' +
        'other than Ed25519 and P-256, a point not on its curve, a weak (small- or mixed-order) Ed25519 key, a ' +
        'kid other than its thumbprint; `proof` missing or wrong, or its nonce unknown, used or expired ' +
        '(details.reason).',
    },
    403: {
      description:
        'This client has an active key and the Key-Change-Proof is missing or wrong (details.reason).',
      codes: ['KEY_CHANGE_PROOF_REQUIRED'],
    },
    409: {
      description:
        'Another merchant client proved it holds this key (make a new one), or it was revoked; or this client ' +
        'has 20 active keys.',
      codes: ['CONFLICT'],
    },
  },
});
