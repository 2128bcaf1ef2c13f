import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { maxEntriesPage, publicLogRead } from '../../../lib/key-log/reads.js';
import { keyLogEntriesSchema, logSize } from '../../../lib/key-log/schemas.js';

export const listKeyLogEntriesRoute = defineRoute({
  name: 'list-key-log-entries',
  ...publicLogRead,
  path: '/api/v1/key-log/entries',
  entry: 'functions/key-log/list-key-log-entries/handler.ts',
  cache: { maxAgeSeconds: 3600 },
  docs: {
    tag: 'merchants',
    summary: 'Read key log entries',
    description: `Leaves start to end − 1 of the key log (at most ${maxEntriesPage}). No API key; cacheable.`,
    details:
      '(anyone, no API key) → `{ start, end, entries }`: each entry is one key event, `{ index, merchantClientId, ' +
      'kid, jwk, event, at }` with `event` `registered` or `revoked`; the leaf hashed is its RFC 8785 JSON. A ' +
      'merchant (or anyone) walks the log from the size it last saw to the current head and looks for keys under ' +
      `its name it did not register (the SDK: watchMerchantKeys). At most ${maxEntriesPage} entries a page; \`end\` ` +
      'beyond the head, `end ≤ start` or a wider page is `400` naming the field. Leaves never change, so the page ' +
      'is `Cache-Control: public, max-age=3600` with an `ETag`.',
  },
  request: { query: z.object({ start: logSize('start'), end: logSize('end') }) },
  response: { description: 'The entries.', schema: keyLogEntriesSchema, enveloped: true },
  errors: { 400: { description: 'start or end is not a whole number, or not a range of the log.' } },
});
