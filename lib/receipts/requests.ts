import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import { hashedPan } from '../kernel/fields.js';
import { receiptCredentialSchema } from './credential-field.js';
import { checkAmounts, flattenedReceiptSchema } from './flattened.js';
import { digitalReceiptSchema } from './schemas.js';
import { checkReceiptAdditions } from './standard-fields.js';
import { envelopeInputSchema } from '../kernel/envelope-input.js';
import { uuid } from '../kernel/fields.js';
import { currency, dateTime } from '../kernel/fields.js';

export const recipientIdentifierSchema = lazySchema(() =>
  z
    .strictObject({
      type: z.enum(['email', 'phone', 'national_id', 'bank_account']),
      value: z.string().min(1).max(320),
    })
    .meta({
      id: 'RecipientIdentifier',
      description:
        "Accepted for the specification's sake and then dropped: it never selects a registered user and is not " +
        'stored in any form.',
    }),
);

/** Nested form: a whole DigitalReceipt plus who it is for. */
export const nestedEncryptBody = lazySchema(() =>
  z
    .strictObject({
      receipt: digitalReceiptSchema,
      recipientIdentifier: recipientIdentifierSchema,
      recipientHashedPan: hashedPan.optional(),
      receiptCredential: receiptCredentialSchema.optional(),
    })
    .superRefine((body, ctx) => checkReceiptAdditions(body.receipt, ['receipt'], ctx))
    .superRefine((body, ctx) => {
      // The service seals a signature it has checked, from the header; one written into the body would
      // be sealed unchecked and read by the device as the merchant's.
      if (body.receipt.merchantSignature !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['receipt', 'merchantSignature'],
          message: 'is set by the service from the Receipt-Signature header: send the signature there',
        });
      }
      if (body.receipt.receiptCredential !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['receipt', 'receiptCredential'],
          message: "is sealed by the service from the body's receiptCredential once checked: send it there",
        });
      }
      // The network's references are the service's to attest, read from the provider after the charge.
      if (body.receipt.cardTransaction !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['receipt', 'cardTransaction'],
          message: "is set by the service from the provider's payment: a request may not send it",
        });
      }
    })
    .meta({
      id: 'NestedEncryptRequest',
      description:
        'A whole DigitalReceipt and who it is for. Chosen when the body has a `receipt` member. The recipient ' +
        'is the user registered with recipientHashedPan when given and registered; otherwise the receipt is escrowed. ' +
        'With allowances or charges, summary.total = subtotal − allowances + charges + totalTax + tipAmount and ' +
        'totalDiscount = allowances + line discounts; a summary.taxBreakdown must agree with the lines (docs/FORMATS.md).',
    }),
);

/** Flattened form: the merchant fields shared with payment creation. */
export const flattenedEncryptBody = lazySchema(() =>
  flattenedReceiptSchema.superRefine(checkAmounts).meta({
    id: 'FlattenedEncryptRequest',
    description:
      'The merchant-side fields shared with payment creation. Chosen when the body has no `receipt` member. ' +
      'Amounts must add up: subtotal = sum of items[].totalPrice and totalAmount = subtotal − allowances + ' +
      'charges + taxAmount; a taxBreakdown must agree with the lines (docs/FORMATS.md); ' +
      'items may be empty only with mockItems: true.',
    // Documents how encryptBody below tells the forms apart, so the document's oneOf is exact.
    not: { type: 'object', properties: { receipt: {} }, required: ['receipt'] },
  }),
);

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
export const encryptBody = lazySchema(() =>
  z.unknown().transform((value, ctx): EncryptBody => {
    const result = isNestedForm(value)
      ? { form: 'nested' as const, parsed: nestedEncryptBody.safeParse(value, { reportInput: true }) }
      : { form: 'flattened' as const, parsed: flattenedEncryptBody.safeParse(value, { reportInput: true }) };
    if (!result.parsed.success) {
      for (const issue of result.parsed.error.issues) ctx.addIssue({ ...issue });
      return z.NEVER;
    }
    return { form: result.form, ...result.parsed.data } as EncryptBody;
  }),
);

export const decryptReceiptBody = lazySchema(() =>
  z
    .strictObject({
      envelope: envelopeInputSchema,
      accessTokenId: uuid,
      privateKey: z.string().min(1).max(16_384),
    })
    .meta({ id: 'DecryptReceiptRequest' }),
);

export const MAX_CLAIMED_TRANSACTIONS = 50;

/** The card network's references as an issuer's authorization record has them: printable ASCII, no spaces. */
export const authorizationCodeField = lazySchema(() =>
  z
    .string()
    .regex(/^[\x21-\x7e]{1,64}$/, 'must be 1 to 64 printable ASCII characters without spaces')
    .meta({
      description:
        'The authorization code the issuer gave the transaction (Stripe `authorization_code`, Square ' +
        '`auth_result_code`). Needs amount and currency beside it.',
      examples: ['A1B2C3'],
    }),
);
export const networkTransactionIdField = lazySchema(() =>
  z
    .string()
    .regex(/^[\x21-\x7e]{1,128}$/, 'must be 1 to 128 printable ASCII characters without spaces')
    .meta({
      description: "The card network's id of the transaction (Visa's transaction id, Mastercard's trace id).",
      examples: ['581012345678901'],
    }),
);

const claimedTransactionFields = {
  amount: z
    .number()
    .int('must be an integer amount in the smallest currency unit')
    .min(1, 'must be positive')
    .optional(),
  currency: currency.optional(),
  transactionDate: dateTime.optional(),
  cardLast4: z
    .string()
    .regex(/^\d{4}$/, 'must be the last 4 digits')
    .optional(),
  authorizationCode: authorizationCodeField.optional(),
  networkTransactionId: networkTransactionIdField.optional(),
};

/**
 * A transaction names enough to be looked up by: its network transaction id; or its authorization code
 * with amount and currency; or amount, currency and time (DECISIONS, round 4, "Card-network
 * references"). What is missing is named, so the caller knows what to add.
 */
function checkLookupFields(
  transaction: {
    amount?: number | undefined;
    currency?: string | undefined;
    transactionDate?: string | undefined;
    authorizationCode?: string | undefined;
    networkTransactionId?: string | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (transaction.networkTransactionId !== undefined) return;
  const needed =
    transaction.authorizationCode !== undefined
      ? (['amount', 'currency'] as const)
      : (['amount', 'currency', 'transactionDate'] as const);
  for (const field of needed) {
    if (transaction[field] === undefined)
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message:
          transaction.authorizationCode !== undefined
            ? 'is required beside authorizationCode'
            : 'is required unless the transaction gives networkTransactionId, or authorizationCode with amount and currency',
      });
  }
}

const lookupDescription =
  'Looked up by its networkTransactionId when given, else by its authorizationCode (with amount and ' +
  'currency), else by amount, currency and transactionDate; every other field given must match too.';

export const claimedTransactionSchema = lazySchema(() =>
  z
    .strictObject(claimedTransactionFields)
    .superRefine(checkLookupFields)
    .meta({
      id: 'ClaimedTransaction',
      description:
        "A transaction on the user's card as the issuer's ledger has it: the amount in minor units, its currency, " +
        `and when it was authorised, and/or the network's references. ${lookupDescription}`,
    }),
);

export const claimReceiptsBody = lazySchema(() =>
  z
    .strictObject({
      userId: uuid,
      transactions: z.array(claimedTransactionSchema).min(1).max(MAX_CLAIMED_TRANSACTIONS),
    })
    .meta({ id: 'ClaimReceiptsRequest' }),
);

export const MAX_MATCHED_TRANSACTIONS = 100;

const referenceMessage = 'must be 1 to 128 printable ASCII characters (space to ~)';

/** The issuer's own id of a ledger line: echoed back as it came, never stored or logged. */
export const ledgerReference = lazySchema(() =>
  z
    .string()
    .regex(/^[\x20-\x7e]{1,128}$/, referenceMessage)
    .meta({
      description:
        "The issuer's own id of the ledger line (1 to 128 printable ASCII characters), echoed back with its " +
        'matches. Not stored: only counts are audited.',
      examples: ['ledger-2026-11-21-000042'],
    }),
);

export const matchedTransactionSchema = lazySchema(() =>
  z
    .strictObject({ reference: ledgerReference, ...claimedTransactionFields })
    .superRefine(checkLookupFields)
    .meta({
      id: 'MatchedTransaction',
      description:
        "A line of the user's card statement as the issuer's ledger has it: its reference, the amount in minor " +
        'units, its currency, when it was authorised and, when known, the last four digits of the card; and/or ' +
        `its authorization code or network transaction id (a network-style lookup). ${lookupDescription}`,
    }),
);

export const matchReceiptsBody = lazySchema(() =>
  z
    .strictObject({
      transactions: z
        .array(matchedTransactionSchema)
        .min(1)
        .max(MAX_MATCHED_TRANSACTIONS)
        .superRefine((transactions, ctx) => {
          // The answer is keyed by reference: a repeated one would be ambiguous.
          const seen = new Set<string>();
          for (const [index, { reference }] of transactions.entries()) {
            if (seen.has(reference))
              ctx.addIssue({
                code: 'custom',
                path: [index, 'reference'],
                message: 'repeats an earlier reference',
              });
            seen.add(reference);
          }
        }),
    })
    .meta({ id: 'MatchReceiptsRequest' }),
);
