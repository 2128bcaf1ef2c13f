import * as z from 'zod';
import { checkAmounts, flattenedReceiptSchema } from '../../lib/receipts/flattened.js';
import { digitalReceiptSchema, hashedPan } from '../../lib/receipts/schemas.js';

export const recipientIdentifierSchema = z
  .object({
    type: z.enum(['email', 'phone', 'national_id', 'bank_account']),
    value: z.string().min(1).max(320),
  })
  .meta({
    id: 'RecipientIdentifier',
    description: 'Kept only as a SHA-256 hash; it never selects a registered user.',
  });

/** Nested form: a whole DigitalReceipt plus who it is for. */
export const nestedEncryptBody = z
  .object({
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
 * else the flattened one, so validation errors name the fields of the form the caller meant.
 */
export const encryptBody = z.unknown().transform((value, ctx): EncryptBody => {
  const result = isNestedForm(value)
    ? { form: 'nested' as const, parsed: nestedEncryptBody.safeParse(value) }
    : { form: 'flattened' as const, parsed: flattenedEncryptBody.safeParse(value) };
  if (!result.parsed.success) {
    for (const issue of result.parsed.error.issues)
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    return z.NEVER;
  }
  return { form: result.form, ...result.parsed.data } as EncryptBody;
});
