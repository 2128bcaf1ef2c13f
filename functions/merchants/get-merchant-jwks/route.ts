import * as z from 'zod';
import { uuid } from '../../../lib/kernel/fields.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { merchantJwksSchema } from '../../../lib/merchants/schemas.js';

export const getMerchantJwksRoute = defineRoute({
  name: 'get-merchant-jwks',
  method: 'GET',
  path: '/api/v1/merchants/{merchantClientId}/jwks.json',
  entry: 'functions/merchants/get-merchant-jwks/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read', merchantKeys: 'read' },
  cache: { maxAgeSeconds: 300 },
  docs: {
    tag: 'merchants',
    summary: "A merchant's signing keys as a JWKS",
    description:
      "The merchant client's active signing keys as a JWK Set, for any verifier. No API key; cacheable for five minutes.",
    details:
      '(anyone, no API key) → `{ keys }`: each active key’s public JWK with `kid` (its RFC 7638 thumbprint), ' +
      '`alg` and `use: "sig"`, oldest first. A revoked key drops out at once (within the cache’s five minutes) and ' +
      'stays in the key log. A key is served only once its registration is in the log. A client that never ' +
      'registered a key is `404`; one whose keys are all revoked answers `{ keys: [] }`. ' +
      '`Cache-Control: public, max-age=300` and an `ETag`.',
  },
  request: { params: z.object({ merchantClientId: uuid }) },
  response: { description: 'The JWK Set.', schema: merchantJwksSchema, enveloped: false },
  errors: {
    400: { description: 'merchantClientId is not a UUID.' },
    404: { description: 'No merchant client with signing keys has this id.' },
  },
});
