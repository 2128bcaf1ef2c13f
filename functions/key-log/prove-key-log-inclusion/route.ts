import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { publicLogRead } from '../../../lib/key-log/reads.js';
import { kidInclusionSchema, logSize } from '../../../lib/key-log/schemas.js';
import { kidSchema } from '../../../lib/merchants/schemas.js';

export const proveKeyLogInclusionRoute = defineRoute({
  name: 'prove-key-log-inclusion',
  ...publicLogRead,
  path: '/api/v1/key-log/proof/inclusion',
  entry: 'functions/key-log/prove-key-log-inclusion/handler.ts',
  cache: { maxAgeSeconds: 3600 },
  docs: {
    tag: 'merchants',
    summary: 'Prove a kid is in the key log',
    description:
      'Every leaf of a tree of the key log naming the kid, each with its RFC 9162 audit path. No API key; cacheable.',
    details:
      '(anyone, no API key) `?kid=&treeSize=` → `{ kid, treeSize, entries: [{ leaf, proof }] }`, oldest first: ' +
      'the kid’s registration and, once revoked, its revocation. Take `treeSize` from a tree head you verified; ' +
      'hash each leaf (SHA-256 of 0x00 ‖ its RFC 8785 JSON) and check the path against that head’s root (the ' +
      'SDK: `verifyReceiptSignature` with `keyLog`). A kid the tree does not name is `404`. One read finds the ' +
      'kid’s leaves, then O(log n) stored nodes per leaf. A size beyond the head or a missing parameter is `400` ' +
      'naming the field. A tree of a given size never changes: `Cache-Control: public, max-age=3600` with an `ETag`.',
  },
  request: { query: z.object({ kid: kidSchema, treeSize: logSize('treeSize') }) },
  response: {
    description: 'The inclusion proofs of the kid’s leaves.',
    schema: kidInclusionSchema,
    enveloped: true,
  },
  errors: {
    400: { description: 'kid or treeSize is missing, or treeSize is not a size of the log.' },
    404: { description: 'The tree of this size names no key with this kid.' },
  },
});
