import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { ImportedKey } from '../../../lib/onboarding/onboarding.js';
import { base64Text, uuid } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';
import { importKeyBody } from '../../../lib/onboarding/schemas.js';

export const importedKeyResponse = z
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
  .meta({ id: 'ImportedKey', description: 'A public key imported from a device. There is no private key.' });

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
