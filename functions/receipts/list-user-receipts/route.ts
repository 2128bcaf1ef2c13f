import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { dateTime, pagingCursor, uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { paymentStatusSchema } from '../../../lib/transactions/schemas.js';

export const receiptSummarySchema = lazySchema(() =>
  z
    .strictObject({
      receiptId: uuid,
      merchantId: uuid,
      transactionId: uuid,
      createdAt: dateTime,
      keyId: z.string().meta({ description: "The user's keyId the receipt is wrapped for." }),
      paymentGateway: z
        .enum(['gateway_a', 'gateway_b', 'other'])
        .nullable()
        .meta({ description: 'The gateway of the transaction mapping, or null when the receipt has none.' }),
      paymentId: z.string().nullable().meta({
        description: "The gateway's payment id when the payment was made through this service, else null.",
      }),
      paymentStatus: paymentStatusSchema,
      relatedReceiptId: uuid.nullable().meta({
        description: 'A refund receipt: the receiptId of the sale it refunds. null for any other receipt.',
      }),
    })
    .meta({
      id: 'InboxReceipt',
      description:
        'One receipt of a user: identifiers only, never its content. Fetch it with GET /receipts/{receiptId}.',
    }),
);

export const receiptInboxPageSchema = lazySchema(() =>
  z
    .strictObject({
      receipts: z.array(receiptSummarySchema),
      nextCursor: z.string().nullable(),
    })
    .meta({
      id: 'InboxPage',
      description: 'Newest first; pass `nextCursor` as `cursor` for the next page (null on the last one).',
    }),
);

const limitMessage = 'must be a number from 1 to 100';

export const listUserReceiptsRoute = defineRoute({
  name: 'list-user-receipts',
  method: 'GET',
  path: '/api/v1/users/{userId}/receipts',
  entry: 'functions/receipts/list-user-receipts/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, users: 'read', receipts: 'read', transactions: 'read' },
  cursors: true,
  docs: {
    tag: 'receipts',
    summary: "List a user's receipts",
    description:
      "The receipts wrapped for one of this issuer's users, newest first, as summaries of identifiers. Escrowed " +
      'receipts appear once a claim wraps them for the user. The cursor is opaque and made for this user; pages ' +
      'read on with it neither repeat nor skip a receipt that existed when paging began (newer receipts sort ' +
      "before it: start again without a cursor to see them). Another issuer's user is the same 404 as an " +
      'unknown one.',
    details:
      "Issuer. The inbox: the receipts wrapped for one of this issuer's users, newest first, as `{ " +
      'receipts: [{ receiptId, merchantId, transactionId, createdAt, keyId, paymentGateway, paymentId, ' +
      'paymentStatus, relatedReceiptId }], nextCursor }`: identifiers and statuses only, never content ' +
      '(fetch the envelope below and open it on the device). `paymentGateway` and `paymentId` are ' +
      "those of the receipt's transaction mapping (`paymentId` only for payments made through the " +
      "service), else `null`; `paymentStatus` is the receipt's (`null` for one made by " +
      '`receipts/encrypt`), and a refund receipt names its sale in `relatedReceiptId` (`null` on any ' +
      'other). `limit` is 1–100, default 25. Pass `nextCursor` as `cursor` for the next page (it is ' +
      '`null` on the last one); the cursor is sealed for this user and this client (see Paging ' +
      '(docs/API.md)). Receipts stored while you page sort before the cursor, so a paging neither ' +
      'repeats nor skips a receipt that existed when it began; start again without a cursor to see new ' +
      'ones. Escrowed receipts appear once a claim wraps them for the user, in the place of their ' +
      'original `createdAt`: one claimed while you page can land behind your cursor, so rely on its ' +
      '`receipt.available` event (or start again) rather than on a paging in progress to learn of it. ' +
      "Another issuer's user is the same `404` as an unknown one.",
  },
  request: {
    params: lazySchema(() => z.object({ userId: uuid })),
    query: lazySchema(() =>
      z.object({
        limit: z.coerce
          .number({ message: limitMessage })
          .int(limitMessage)
          .min(1, limitMessage)
          .max(100, limitMessage)
          .default(25),
        cursor: pagingCursor('user'),
      }),
    ),
  },
  response: { description: 'A page of receipt summaries.', schema: receiptInboxPageSchema, enveloped: true },
  errors: {
    400: {
      description:
        'userId or limit is not valid (INVALID_REQUEST), or the cursor was not returned by this endpoint for ' +
        'this user and client (INVALID_CURSOR).',
      codes: ['INVALID_CURSOR'],
    },
    404: { description: 'No such user, or a user of another client: refused alike.' },
  },
});
