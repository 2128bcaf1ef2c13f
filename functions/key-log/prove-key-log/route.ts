import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { consistencyProofSchema, kidInclusionSchema, logSize } from '../../../lib/key-log/schemas.js';
import { kidSchema } from '../../../lib/merchants/schemas.js';

/*
 * Both proofs are one route (one function) with two URLs: the same reads of the same table, and a
 * route costs about 20 KB of the service template (docs/DEPLOY.md).
 */
export const proveKeyLogRoute = defineRoute({
  name: 'prove-key-log',
  method: 'GET',
  path: '/api/v1/key-log/proof/{kind}',
  entry: 'functions/key-log/prove-key-log/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read', keyLog: 'read' },
  cache: { maxAgeSeconds: 3600 },
  docs: {
    tag: 'merchants',
    summary: 'Prove a kid is in the key log, or that the log only grew',
    description:
      '`inclusion?kid=&treeSize=`: every leaf naming the kid, each with its RFC 9162 audit path. ' +
      '`consistency?first=&second=`: the RFC 9162 consistency proof between two tree sizes. No API key; cacheable.',
    details:
      '(anyone, no API key) `GET /api/v1/key-log/proof/inclusion?kid=&treeSize=` → `{ kid, treeSize, entries: ' +
      '[{ leaf, proof }] }`, oldest first: the kid’s registration and, once revoked, its revocation. Take `treeSize` ' +
      'from a tree head you verified; hash each leaf (SHA-256 of 0x00 ‖ its RFC 8785 JSON) and check the path ' +
      'against that head’s root (the SDK: `verifyReceiptSignature` with `keyLog`). A kid the tree does not name is ' +
      '`404`. One read finds the kid’s leaves, then O(log n) stored nodes per leaf. ' +
      '`GET /api/v1/key-log/proof/consistency?first=&second=` → `{ first, second, proof }`: a device that kept a ' +
      'tree head of size `first` checks that the head of size `second` extends it (nothing removed or changed). ' +
      'Sizes beyond the head, `first` of 0 or above `second`, or a missing parameter are `400` naming the field. ' +
      'A tree of a given size never changes: `Cache-Control: public, max-age=3600` with an `ETag`.',
  },
  request: {
    params: z.object({ kind: z.enum(['inclusion', 'consistency']) }),
    query: z.object({
      kid: kidSchema.optional(),
      treeSize: logSize('treeSize').optional(),
      first: logSize('first').optional(),
      second: logSize('second').optional(),
    }),
  },
  response: {
    description: 'The inclusion proofs of the kid’s leaves, or the consistency proof.',
    schema: z.union([kidInclusionSchema, consistencyProofSchema]),
    enveloped: true,
  },
  errors: {
    400: { description: 'A parameter is missing or not a size of the log, or kind is neither proof.' },
    404: { description: 'The tree of this size names no key with this kid.' },
  },
});
