import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { ImportedKey } from '../../../lib/onboarding/onboarding.js';
import { base64Text, uuid } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';
import { importKeyBody } from '../../../lib/onboarding/schemas.js';

export const importedKeyResponse = lazySchema(() =>
  z
    .strictObject({
      keyId: uuid.meta({
        description: 'Send as `keyId` to register or rotate-user-key, like a generated one.',
      }),
      publicKey: base64Text(
        'The key as canonical base64 DER SubjectPublicKeyInfo, whatever form it was sent in.',
      ),
      algorithm: z.enum(['RSA-OAEP-256', 'ECDH-ES+A256KW']).meta({
        description:
          'How receipts are wrapped for this key, from its type: RSA keys RSA-OAEP-256, P-256 keys ECDH-ES+A256KW.',
      }),
    })
    .meta({
      id: 'ImportedKey',
      description: 'A public key imported from a device. There is no private key.',
    }),
);

export const responseTypeMatches: SameType<z.output<typeof importedKeyResponse>, ImportedKey> = true;

export const importKeyRoute = defineRoute({
  name: 'import-key',
  method: 'POST',
  path: '/api/v1/onboarding/keys',
  entry: 'functions/onboarding/import-key/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, keyPairs: 'write' },
  rateGroup: 'keyGeneration',
  docs: {
    tag: 'onboarding',
    summary: 'Import a public key made on the device',
    description:
      'The device path of step 1: the key pair is made on the cardholder’s device (for P-256, in its secure ' +
      'hardware) and only its public half is sent. RSA 2048–4096 is used with RSA-OAEP-256, EC P-256 with ' +
      'ECDH-ES+A256KW. The answer has no private key: the service never sees it. `register` and ' +
      '`rotate-user-key` accept the keyId like one from generate-keys, bound to this client.',
    details:
      "Issuer. The device path of step 1: `{ publicKey }`, a key pair's public half made on the " +
      'device, as base64 DER SubjectPublicKeyInfo (or PEM) or as a public JWK object → `201 { keyId, ' +
      'publicKey, algorithm }`, `publicKey` the canonical base64 DER SPKI. RSA 2048–4096 bits is used ' +
      'with `RSA-OAEP-256`, EC P-256 with `ECDH-ES+A256KW` (ENVELOPE.md (docs/ENVELOPE.md)). Anything ' +
      'else is `400 INVALID_REQUEST` whose field details name the problem (another curve or key type, ' +
      'a modulus outside the range, a JWK with private members, not a key). An RSA key must have the ' +
      'public exponent 65537 (any other, e = 1, an even e or one as large as the modulus, is refused ' +
      'naming it) and an odd modulus; a P-256 key must be a point on the curve other than the ' +
      'identity. A P-256 key sent with its point compressed is accepted and stored, and answered, as ' +
      'the canonical uncompressed SPKI. Every key is proven before it is stored: the service seals a ' +
      'throw-away envelope to it, and a key nothing can be sealed to is refused here (`400` naming ' +
      "why), never at a merchant's payment. No private key is sent or made: the service never has it. " +
      'The `keyId` is bound to this client and works in `register` and `POST /users/{userId}/key` ' +
      "exactly like one from generate-keys; it shares generate-keys' rate budget.",
  },
  request: { body: { description: 'The public key, as SPKI or JWK.', schema: importKeyBody } },
  response: { description: 'The imported key.', schema: importedKeyResponse, status: 201, enveloped: true },
  errors: {
    400: {
      description:
        'Not an acceptable public key (another curve or key type, RSA outside 2048–4096, a private JWK, garbage); ' +
        'the field details name the problem.',
    },
  },
});
