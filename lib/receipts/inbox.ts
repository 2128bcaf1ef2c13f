import type { Caller } from '../api-keys/authenticator.js';
import type { ReceiptEnvelope, StoredReceipt } from '../db/receipts.js';
import type { PaymentGatewayName, TransactionMappingRecord } from '../db/transactions.js';
import type { CoreDeps } from '../app/deps.js';
import type { CursorScope, PageKeyShape } from '../crypto/cursor.js';
import { InvalidRequestError, NotFoundError } from '../kernel/errors.js';
import { publicMapping, type TransactionMapping } from '../transactions/transactions.js';
import type { PaymentStatus } from '../kernel/payment-status.js';

/** One line of a user's inbox: ids only, never content, a card tag or claim facts. */
export interface ReceiptSummary {
  receiptId: string;
  merchantId: string;
  transactionId: string;
  createdAt: string;
  keyId: string;
  paymentGateway: PaymentGatewayName | null;
  paymentId: string | null;
  paymentStatus: PaymentStatus | null;
  /** A refund receipt: its sale. */
  relatedReceiptId: string | null;
}

export interface InboxPage {
  receipts: ReceiptSummary[];
  nextCursor: string | null;
}

/** A stored envelope, and the transaction mapping that points to it when there is one. */
export interface FetchedReceipt {
  envelope: ReceiptEnvelope;
  mapping: TransactionMapping | null;
  paymentStatus: PaymentStatus | null;
  relatedReceiptId: string | null;
}

/** What is shown in clear beside an envelope wherever it is answered. */
export const clearFieldsOf = (receipt: StoredReceipt) => ({
  paymentStatus: receipt.paymentStatus ?? null,
  relatedReceiptId: receipt.relatedReceiptId ?? null,
});

export type ReadDeps = Pick<CoreDeps, 'repos'>;
export type InboxDeps = Pick<CoreDeps, 'repos' | 'cursors'>;

/**
 * The cursor seals the index position a page ended at (LastEvaluatedKey of by-recipient-user) for this
 * user and this issuer (lib/crypto/cursor.ts): it shows nothing and opens for no other user or client.
 */
const INBOX_PAGE_KEY: PageKeyShape = {
  names: ['recipientUserId', 'createdAt', 'pk', 'receiptId'],
  resourceAttribute: 'recipientUserId',
};
const inboxScope = (userId: string, caller: Caller): CursorScope => ({
  list: 'inbox',
  resourceId: userId,
  clientId: caller.clientId,
});

/** Whether `userId` is a user of this issuer client; another client's user is treated as unknown. */
async function isIssuersUser(deps: ReadDeps, userId: string, issuerClientId: string): Promise<boolean> {
  const user = await deps.repos.users.getById(userId);
  return user?.clientId === issuerClientId;
}

const mappingKey = (receipt: StoredReceipt) => ({
  merchantClientId: receipt.merchantClientId,
  transactionId: receipt.envelope.transactionId,
});
const sameKey = (a: { merchantClientId: string; transactionId: string }, b: typeof a) =>
  a.merchantClientId === b.merchantClientId && a.transactionId === b.transactionId;

/** The mapping that points to this receipt; a mapping of its transactionId to another receipt is not its. */
const mappingOf = (
  receipt: StoredReceipt,
  mappings: readonly TransactionMappingRecord[],
): TransactionMappingRecord | undefined =>
  mappings.find(
    (mapping) => sameKey(mapping, mappingKey(receipt)) && mapping.receiptId === receipt.receiptId,
  );

/**
 * GET /users/{userId}/receipts: one page of the user's receipts, newest first, for the issuer that
 * registered the user. Escrowed receipts join the list when a claim wraps them for the user.
 */
export async function listUserReceipts(
  deps: InboxDeps,
  input: { userId: string; limit: number; cursor: string | undefined; caller: Caller },
): Promise<InboxPage> {
  // The user first: a cursor is made for a user and a client, so it can only be judged for a known one.
  if (!(await isIssuersUser(deps, input.userId, input.caller.clientId)))
    throw new NotFoundError('No user with this userId', { field: 'userId' });
  const scope = inboxScope(input.userId, input.caller);
  const startKey =
    input.cursor === undefined ? undefined : await deps.cursors.open(input.cursor, scope, INBOX_PAGE_KEY);
  const { receipts, lastKey } = await deps.repos.receipts.pageForRecipient(
    input.userId,
    input.limit,
    startKey,
  );
  const mappings = await deps.repos.transactions.getMany(receipts.map(mappingKey));
  return {
    receipts: receipts.map((receipt) => {
      const mapping = mappingOf(receipt, mappings);
      return {
        receiptId: receipt.receiptId,
        merchantId: receipt.envelope.merchantId,
        transactionId: receipt.envelope.transactionId,
        createdAt: receipt.createdAt,
        keyId: receipt.envelope.keyBundle.keyId,
        paymentGateway: mapping?.paymentGateway ?? null,
        paymentId: mapping?.paymentId ?? null,
        ...clearFieldsOf(receipt),
      };
    }),
    nextCursor: lastKey ? await deps.cursors.seal(scope, lastKey) : null,
  };
}

/** Whether the caller may read this receipt: the merchant client that made it, or its recipient's issuer. */
export async function mayRead(deps: ReadDeps, receipt: StoredReceipt, caller: Caller): Promise<boolean> {
  if (caller.roles.includes('merchant') && receipt.merchantClientId === caller.clientId) return true;
  if (!caller.roles.includes('issuer') || !receipt.recipientUserId) return false;
  return isIssuersUser(deps, receipt.recipientUserId, caller.clientId);
}

async function withMapping(deps: ReadDeps, receipt: StoredReceipt): Promise<FetchedReceipt> {
  const mapping = await deps.repos.transactions.get(mappingKey(receipt));
  return {
    envelope: receipt.envelope,
    mapping: mapping && mapping.receiptId === receipt.receiptId ? publicMapping(mapping, receipt) : null,
    ...clearFieldsOf(receipt),
  };
}

const unknownReceipt = () => new NotFoundError('No receipt with this receiptId', { field: 'receiptId' });

/**
 * GET /receipts/{receiptId}: the merchant reads its own receipt of this id (its namespace); an
 * issuer reads the receipt of this id wrapped for one of its users. A receiptId is unique within a
 * merchant client only, so another merchant that knows the id (and the card) can store a receipt of
 * the same id for the same user: the issuer names the merchantId (every inbox entry and webhook event
 * carries it; a merchantId belongs to one merchant client), and without it is answered only when one
 * merchant's receipt is its users' — never the newest of several, which let a second merchant put its
 * own envelope in place of the one the user was paid with (issue 20). Anyone else gets the same 404
 * as for an unknown id.
 */
export async function getReceipt(
  deps: ReadDeps,
  receiptId: string,
  caller: Caller,
  merchantId?: string,
): Promise<FetchedReceipt> {
  const named = (receipt: StoredReceipt) =>
    merchantId === undefined || receipt.envelope.merchantId === merchantId;
  if (caller.roles.includes('merchant')) {
    const own = await deps.repos.receipts.get({ merchantClientId: caller.clientId, receiptId });
    if (own && named(own)) return withMapping(deps, own);
  }
  if (caller.roles.includes('issuer')) {
    const candidates = (await deps.repos.receipts.allWithReceiptId(receiptId)).filter(
      (candidate) => candidate.recipientUserId !== undefined && named(candidate),
    );
    const readable = await Promise.all(
      candidates.map((candidate) => isIssuersUser(deps, candidate.recipientUserId!, caller.clientId)),
    );
    const mine = candidates.filter((_, index) => readable[index]);
    if (mine.length > 1) {
      throw new InvalidRequestError(
        "Several merchants' receipts for your users have this receiptId: name the merchantId",
        [
          {
            field: 'merchantId',
            message:
              'is required when several merchants use this receiptId (it is in every inbox entry and event)',
          },
        ],
      );
    }
    if (mine[0]) return withMapping(deps, mine[0]);
  }
  throw unknownReceipt();
}
