import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { publicLogRead } from '../../../lib/key-log/reads.js';
import { consistencyProofSchema, logSize } from '../../../lib/key-log/schemas.js';

export const proveKeyLogConsistencyRoute = defineRoute({
  name: 'prove-key-log-consistency',
  ...publicLogRead,
  path: '/api/v1/key-log/proof/consistency',
  entry: 'functions/key-log/prove-key-log-consistency/handler.ts',
  cache: { maxAgeSeconds: 3600 },
  docs: {
    tag: 'merchants',
    summary: 'Prove the key log only grew',
    description:
      'The RFC 9162 consistency proof between two tree sizes of the key log. No API key; cacheable.',
    details:
      '(anyone, no API key) `?first=&second=` → `{ first, second, proof }`: a device that kept a tree head of ' +
      'size `first` checks that the head of size `second` extends it (nothing removed or changed). Sizes beyond ' +
      'the head, `first` of 0 or above `second`, or a missing parameter are `400` naming the field. A tree of a ' +
      'given size never changes: `Cache-Control: public, max-age=3600` with an `ETag`.',
  },
  request: { query: z.object({ first: logSize('first'), second: logSize('second') }) },
  response: { description: 'The consistency proof.', schema: consistencyProofSchema, enveloped: true },
  errors: { 400: { description: 'first or second is missing, or not a size of the log.' } },
});
