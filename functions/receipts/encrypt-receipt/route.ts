import * as z from 'zod';
import { defineRoute } from '../../../lib/kernel/route.js';
import {
  encryptedEnvelopeResponse,
  flattenedEnvelopeResponse,
} from '../../../lib/receipts/envelope-schema.js';
import { checkAmounts, flattenedReceiptSchema } from '../../../lib/receipts/flattened.js';
import { hashedPan } from '../../../lib/kernel/fields.js';
import { digitalReceiptSchema } from '../../../lib/receipts/schemas.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const recipientIdentifierSchema = z
  .strictObject({
    type: z.enum(['email', 'phone', 'national_id', 'bank_account']),
    value: z.string().min(1).max(320),
  })
  .meta({
    id: 'RecipientIdentifier',
    description:
      "Accepted for the specification's sake and then dropped: it never selects a registered user and is not " +
      'stored in any form.',
  });

/** Nested form: a whole DigitalReceipt plus who it is for. */
export const nestedEncryptBody = z
  .strictObject({
    receipt: digitalReceiptSchema,
    recipientIdentifier: recipientIdentifierSchema,
    recipientHashedPan: hashedPan.optional(),
  })
  .meta({
    id: 'NestedEncryptRequest',
    description:
      'A whole DigitalReceipt and who it is for. Chosen when the body has a `receipt` member. The recipient ' +
      'is the user registered with recipientHashedPan when given and registered; otherwise the receipt is escrowed.',
  });

/** Flattened form: the merchant fields shared with payment creation. */
export const flattenedEncryptBody = flattenedReceiptSchema.superRefine(checkAmounts).meta({
  id: 'FlattenedEncryptRequest',
  description:
    'The merchant-side fields shared with payment creation. Chosen when the body has no `receipt` member. ' +
    'Amounts must add up: subtotal = sum of items[].totalPrice and totalAmount = subtotal + taxAmount; ' +
    'items may be empty only with mockItems: true.',
  // Documents how encryptBody below tells the forms apart, so the document's oneOf is exact.
  not: { type: 'object', properties: { receipt: {} }, required: ['receipt'] },
});

export type NestedEncryptBody = z.infer<typeof nestedEncryptBody>;
export type FlattenedEncryptBody = z.infer<typeof flattenedEncryptBody>;
export type EncryptBody =
  ({ form: 'nested' } & NestedEncryptBody) | ({ form: 'flattened' } & FlattenedEncryptBody);

const isNestedForm = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && 'receipt' in value;

/**
 * The two forms are told apart by shape: a body with a `receipt` member is the nested form, anything
 * else the flattened one, so validation errors name the fields of the form the caller meant. The
 * chosen form's issues pass through whole (unknown fields, missing ones), not as one "invalid union".
 */
export const encryptBody = z.unknown().transform((value, ctx): EncryptBody => {
  const result = isNestedForm(value)
    ? { form: 'nested' as const, parsed: nestedEncryptBody.safeParse(value, { reportInput: true }) }
    : { form: 'flattened' as const, parsed: flattenedEncryptBody.safeParse(value, { reportInput: true }) };
  if (!result.parsed.success) {
    for (const issue of result.parsed.error.issues) ctx.addIssue({ ...issue });
    return z.NEVER;
  }
  return { form: result.form, ...result.parsed.data } as EncryptBody;
});

export const encryptReceiptRoute = defineRoute({
  name: 'encrypt-receipt',
  method: 'POST',
  path: '/api/v1/receipts/encrypt',
  entry: 'functions/receipts/encrypt-receipt/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, users: 'read', keyPairs: 'read', receipts: 'write', merchants: 'readWrite' },
  escrow: 'wrap',
  cardTags: true,
  docs: {
    tag: 'receipts',
    summary: 'Encrypt a receipt for its recipient',
    description:
      'AES-256-GCM for the receipt, RSA-OAEP-256 for the content key. A body with a `receipt` member is the ' +
      'nested form, any other the flattened form. The recipient is the user registered with ' +
      '`recipientHashedPan`; when there is none the receipt is encrypted with the escrow key (`isEscrowed: ' +
      'true`) and released only when the issuer of a registered user shows the card transaction ' +
      '(`POST /api/v1/receipts/claim`). The envelope is stored under its receiptId: an ' +
      'identical retry returns the first envelope. Unknown fields are refused, so a misspelt ' +
      '`recipientHashedPan` cannot escrow a receipt silently.',
  },
  request: {
    body: {
      description: 'The nested form or the flattened form.',
      schema: encryptBody,
      documented: z.union([nestedEncryptBody, flattenedEncryptBody]),
    },
  },
  response: {
    description:
      'The envelope. The nested form answers EncryptedReceiptEnvelope; the flattened form answers it without ' +
      'expiresAt and escrowKeyId, as the spec shows.',
    schema: z.union([encryptedEnvelopeResponse, flattenedEnvelopeResponse]),
    enveloped: true,
  },
  errors: {
    403: {
      description:
        "The API key's roles do not include this operation, or the merchantId belongs to another merchant client.",
    },
    409: {
      description: 'A different receipt with this receiptId already exists for this merchant client.',
      codes: ['CONFLICT'],
    },
    500: { description: 'Encryption failed.', codes: ['ENCRYPTION_ERROR'] },
  },
});
