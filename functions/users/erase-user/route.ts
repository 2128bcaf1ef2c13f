import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { dateTime, uuid } from '../../../lib/kernel/fields.js';
import { ERASE_RECEIPTS_PER_CALL } from '../../../lib/users/lifecycle.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const eraseUserParams = lazySchema(() => z.object({ userId: uuid }));

export const userErasureResponse = lazySchema(() =>
  z
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
    .meta({ id: 'UserErasure', description: 'What the erasure deleted.' }),
);

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
    // The erased user's receipts take their evidence entries with them (named on the receipts).
    evidence: 'write',
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
    details:
      'Issuer, for one of its users. No body. → `{ userId, status: "erased", erasedAt, ' +
      'receiptsDeleted, complete }`. In this order:\n\n' +
      '1. The user and its card registration are deleted and an erasure record (userId, clientId, key ' +
      'ids, time) is written, in one transaction: from then on no receipt is wrapped for the user ' +
      '(within the 30 s noted above, on AWS) and no token is granted for it. 2. Its live tokens and ' +
      'their slots, and its key pairs (current and retired), are deleted. 3. Every receipt wrapped for ' +
      "the user is deleted, with its evidence entries, found through the receipts table's " +
      '`by-recipient-user` index, 25 to a batch. A call deletes at most 500, and stops early while it ' +
      'still has time to answer rather than time out; `complete: false` means more remain, and the ' +
      'same `DELETE` carries on. Repeating it is always safe, and also deletes a receipt that another ' +
      'instance wrapped for the user in the 30 s window, or that the (eventually consistent) index had ' +
      'not shown yet.\n\n' +
      'Afterwards nothing the service holds opens for the user: `payments/decrypt` for one of its ' +
      'payments is `404` (the receipt is gone) and `receipts/decrypt` with a copy of an envelope is ' +
      'the uniform `403` (no token can be granted). The card can be registered again, by any issuer, ' +
      "as a new user. Receipts escrowed for the card and never released to the user are the card's, " +
      "not the user's, and stay escrowed. Tokens that expired before the erasure and lost their slot " +
      "are removed by the table's TTL, not by this call. The audit keeps the erasure (`user.erase`). " +
      "Another client's user, and a userId that was never a user, are the same `404 not_found`; only " +
      'the client that erased a user may repeat its erasure.',
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
