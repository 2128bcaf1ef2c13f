import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import type { GeneratedKeyPair } from '../../../lib/onboarding/onboarding.js';
import { base64Text, uuid } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';

export const keyPairResponse = lazySchema(() =>
  z
    .strictObject({
      keyId: uuid.meta({
        description: 'Identifier of the pair; sent back as `keyId` to register and grant-access.',
      }),
      publicKey: base64Text('Base64 DER SubjectPublicKeyInfo of the RSA-2048 public key.'),
      privateKey: base64Text(
        'Base64 DER PKCS#8 private key. Returned only in this response and never stored by the service.',
      ),
      algorithm: z.literal('RSA-OAEP-256'),
    })
    .meta({ id: 'KeyPair', description: 'A freshly generated RSA-2048 key pair.' }),
);

export const responseTypeMatches: SameType<z.output<typeof keyPairResponse>, GeneratedKeyPair> = true;

export const generateKeysRoute = defineRoute({
  name: 'generate-keys',
  method: 'POST',
  path: '/api/v1/onboarding/generate-keys',
  entry: 'functions/onboarding/generate-keys/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, keyPairs: 'write' },
  rateGroup: 'keyGeneration',
  memoryMb: 1024,
  docs: {
    tag: 'onboarding',
    summary: 'Generate an RSA-2048 key pair',
    description:
      'Step 1 of the flow. No request body (any body sent is ignored). Only the public half is stored; the ' +
      'private key is in this response and nowhere else, so the client must keep it.',
    details:
      'Issuer. No body (one sent is ignored). Returns `{ keyId, publicKey, privateKey, algorithm: ' +
      '"RSA-OAEP-256" }` for a new RSA-2048 pair. Only the public key is stored, bound to this client; ' +
      'the private key is in this response only. Failure is `500 KEY_GENERATION_FAILED`. Each call is ' +
      '~40 ms of RSA work, so it has its own, smaller rate budget.',
  },
  request: {},
  response: { description: 'The new key pair.', schema: keyPairResponse, enveloped: true },
  errors: { 500: { description: 'Key generation failed.', codes: ['KEY_GENERATION_FAILED'] } },
});
