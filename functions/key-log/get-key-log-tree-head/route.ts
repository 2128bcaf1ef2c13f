import { defineRoute } from '../../../lib/kernel/route.js';
import { publicLogRead } from '../../../lib/key-log/reads.js';
import { treeHeadSchema } from '../../../lib/key-log/schemas.js';

export const getKeyLogTreeHeadRoute = defineRoute({
  name: 'get-key-log-tree-head',
  ...publicLogRead,
  path: '/api/v1/key-log/tree-head',
  entry: 'functions/key-log/get-key-log-tree-head/handler.ts',
  logKey: true,
  cache: { maxAgeSeconds: 10 },
  docs: {
    tag: 'merchants',
    summary: 'The key log’s signed tree head',
    description:
      'The signed size and root of the transparency log of merchant key events. No API key; cacheable for ' +
      'ten seconds.',
    details:
      '(anyone, no API key) → `{ treeSize, rootHash, timestamp, signature }`: `signature` is a compact JWS ' +
      '(ES256, `typ: tree-head+jws`) of `{ treeSize, rootHash, timestamp }` under the log key ' +
      '(`GET /api/v1/key-log/public-key`); trust the payload it signs. A device verifies it, keeps it, and asks ' +
      'for a consistency proof from it to the next head it sees, so the log cannot show it one history and ' +
      'someone else another. The tree is RFC 9162 §2 (SHA-256, leaf `0x00 ‖ JCS(leaf)`, node `0x01 ‖ left ‖ ' +
      'right`); the empty log’s root is SHA-256 of nothing. `Cache-Control: public, max-age=10` and an `ETag`.',
  },
  request: {},
  response: { description: 'The signed tree head.', schema: treeHeadSchema, enveloped: true },
  errors: {},
});
