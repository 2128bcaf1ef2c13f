import { defineRoute } from '../../../lib/kernel/route.js';
import { logPublicKeySchema } from '../../../lib/key-log/schemas.js';

export const getKeyLogPublicKeyRoute = defineRoute({
  name: 'get-key-log-public-key',
  method: 'GET',
  path: '/api/v1/key-log/public-key',
  entry: 'functions/key-log/get-key-log-public-key/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read' },
  logKey: true,
  cache: { maxAgeSeconds: 10 },
  docs: {
    tag: 'merchants',
    summary: 'The key log’s public key',
    description: 'The JWK the key log’s tree heads verify under. No API key; cacheable for ten seconds.',
    details:
      '(anyone, no API key) → the log key’s public JWK (P-256, `alg: ES256`, `kid` its RFC 7638 thumbprint): pin ' +
      'it in the app (the SDK takes it as `logPublicKey`) and compare it with the one your operator publishes. ' +
      '`Cache-Control: public, max-age=10` and an `ETag`.',
  },
  request: {},
  response: { description: 'The log key’s public JWK.', schema: logPublicKeySchema, enveloped: true },
  errors: {},
});
