import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { logPublicKeySchema, treeHeadSchema } from '../../../lib/key-log/schemas.js';

/*
 * The tree head and the log's public key are one route (one function) with two URLs: both read the
 * log signing key, and a route costs about 20 KB of the service template (docs/DEPLOY.md).
 */
export const getKeyLogDocumentRoute = defineRoute({
  name: 'get-key-log-document',
  method: 'GET',
  path: '/api/v1/key-log/{document}',
  entry: 'functions/key-log/get-key-log-document/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read', keyLog: 'read' },
  logKey: true,
  cache: { maxAgeSeconds: 10 },
  docs: {
    tag: 'merchants',
    summary: 'The key log’s signed tree head, or its public key',
    description:
      '`tree-head`: the signed size and root of the transparency log of merchant key events. `public-key`: ' +
      'the JWK tree heads verify under. No API key; cacheable for ten seconds.',
    details:
      '(anyone, no API key) `GET /api/v1/key-log/tree-head` → `{ treeSize, rootHash, timestamp, signature }`: ' +
      '`signature` is a compact JWS (ES256, `typ: tree-head+jws`) of `{ treeSize, rootHash, timestamp }` under the ' +
      'log key; trust the payload it signs. A device verifies it, keeps it, and asks for a consistency proof from it ' +
      'to the next head it sees, so the log cannot show it one history and someone else another. The tree is RFC ' +
      '9162 §2 (SHA-256, leaf `0x00 ‖ JCS(leaf)`, node `0x01 ‖ left ‖ right`); the empty log’s root is SHA-256 of ' +
      'nothing. `GET /api/v1/key-log/public-key` → the log key’s public JWK (P-256, `alg: ES256`, `kid` its RFC 7638 ' +
      'thumbprint): pin it in the app (the SDK takes it as `logPublicKey`). Another `{document}` is `400`. ' +
      '`Cache-Control: public, max-age=10` and an `ETag`.',
  },
  request: { params: z.object({ document: z.enum(['tree-head', 'public-key']) }) },
  response: {
    description: 'The signed tree head, or the log key’s public JWK.',
    schema: z.union([treeHeadSchema, logPublicKeySchema]),
    enveloped: true,
  },
  errors: { 400: { description: 'document is neither tree-head nor public-key.' } },
});
