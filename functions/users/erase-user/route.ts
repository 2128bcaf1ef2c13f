import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import { dateTime, uuid } from '../../../lib/kernel/fields.js';
import { ERASE_RECEIPTS_PER_CALL } from '../../../lib/users/lifecycle.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const eraseUserParams = z.object({ userId: uuid });

export const userErasureResponse = z
  .strictObject({
    userId: uuid,
    status: z.literal('erased'),
    erasedAt: dateTime,
    receiptsDeleted: z
      .int()
      .min(0)
      .meta({ description: 'Receipts wrapped for the user that this call deleted.' }),
    complete: z.boolean().meta({
      description: `False when this call stopped at its cap of ${ERASE_RECEIPTS_PER_CALL} receipts or its time budget: send the same DELETE again to carry on.`,
    }),
  })
  .meta({ id: 'UserErasure', description: 'What the erasure deleted.' });

export const eraseUserRoute = defineRoute({
  name: 'erase-user',
  method: 'DELETE',
  path: '/api/v1/users/{userId}',
  entry: 'functions/users/erase-user/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: {
    ...platformTables,
    users: 'readWrite',
    keyPairs: 'write',
    accessTokens: 'readWrite',
    receipts: 'readWrite',
    // The erased user's receipts take their evidence entries with them.
    evidence: 'readWrite',
  },
  docs: {
    tag: 'onboarding',
    summary: 'Erase a user',
    description:
      "Erases one of this client's users: the user and its card registration first (nothing new is wrapped " +
      'for it and no token is granted from then on), then its live tokens, its key bindings and every receipt ' +
      `wrapped for it. A call deletes at most ${ERASE_RECEIPTS_PER_CALL} receipts, and stops early rather than time out; \`complete: false\` asks ` +
      'for the same DELETE again, which only the client that erased the user may send and which is safe to ' +
      'repeat. The audit keeps that the erasure happened; the card can be registered again. Receipts ' +
      "escrowed for the card and never released to the user are not the user's and stay escrowed.",
  },
  request: { params: eraseUserParams },
  response: { description: 'What was erased.', schema: userErasureResponse, enveloped: true },
  errors: {
    404: { description: 'No such user, or a user of another client: refused alike.' },
    409: {
      description: 'The user kept changing (concurrent key rotations) during the call: retry.',
      codes: ['CONFLICT'],
    },
  },
});
