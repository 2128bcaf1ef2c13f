import { randomUUID } from 'node:crypto';
import type { Caller } from '../api-keys/authenticator.js';
import type { StoredReceipt } from '../db/receipts.js';
import type { PaymentGatewayName, TransactionMappingRecord } from '../db/transactions.js';
import type { PaymentStatus } from '../kernel/payment-status.js';
import type { AppDeps } from '../app/deps.js';
import { ConflictError, ForbiddenError, NotFoundError } from '../kernel/errors.js';
import type { EnvelopeInput } from '../kernel/envelope-input.js';

/**
 * Spec: TransactionMapping — the stored record without who may read it, with the paymentStatus of
 * its receipt (lib/kernel/payment-status.ts): null for a receipt that has none.
 */
export type TransactionMapping = Omit<TransactionMappingRecord, 'merchantClientId' | 'paymentId'> & {
  paymentStatus: PaymentStatus | null;
};

type TransactionDeps = Pick<AppDeps, 'clock' | 'repos' | 'audit'>;

/** The answer for a mapping; `receipt` is the one it points to, read for its status. */
export const publicMapping = (
  record: TransactionMappingRecord,
  receipt: Pick<StoredReceipt, 'receiptId' | 'paymentStatus'> | null,
): TransactionMapping => ({
  mappingId: record.mappingId,
  transactionId: record.transactionId,
  receiptId: record.receiptId,
  paymentGateway: record.paymentGateway,
  gatewayMetadata: record.gatewayMetadata,
  createdAt: record.createdAt,
  paymentStatus: (receipt?.receiptId === record.receiptId ? receipt.paymentStatus : undefined) ?? null,
});

/** The stored envelope must be the one presented: same ciphertext, wrapped key and bound header. */
const sameEnvelope = (stored: EnvelopeInput, presented: EnvelopeInput): boolean =>
  stored.ciphertext === presented.ciphertext &&
  stored.protected === presented.protected &&
  stored.iv === presented.iv &&
  stored.authTag === presented.authTag &&
  stored.keyBundle.encryptedAesKey === presented.keyBundle.encryptedAesKey &&
  stored.transactionId === presented.transactionId;

/**
 * Maps a transaction to a receipt this merchant encrypted. The first mapping of a transactionId
 * within this merchant client wins: storing the same envelope again returns it; a different receipt
 * of this client for it is a conflict. Another client's ids are never seen here.
 */
export async function storeTransaction(
  deps: TransactionDeps,
  input: {
    envelope: EnvelopeInput;
    paymentGateway: PaymentGatewayName;
    metadata: Record<string, unknown>;
    caller: Caller;
    requestId: string;
    paymentId?: string;
  },
): Promise<TransactionMapping> {
  const { envelope, caller } = input;
  const owner = await deps.repos.merchants.ownerOf(envelope.merchantId);
  if (owner !== null && owner !== caller.clientId)
    throw new ForbiddenError('This merchantId belongs to another merchant client');
  const receipt = await deps.repos.receipts.get({
    merchantClientId: caller.clientId,
    receiptId: envelope.receiptId,
  });
  // Only this client's receipts are looked at, so another's is reported exactly like a missing one.
  if (!receipt) {
    throw new NotFoundError('No receipt with this receiptId was encrypted by this merchant', {
      field: 'envelope.receiptId',
    });
  }
  if (!sameEnvelope(receipt.envelope, envelope)) {
    throw new ConflictError('The envelope differs from the one stored for this receiptId', {
      field: 'envelope',
    });
  }
  const record: TransactionMappingRecord = {
    mappingId: randomUUID(),
    transactionId: envelope.transactionId,
    receiptId: envelope.receiptId,
    paymentGateway: input.paymentGateway,
    gatewayMetadata: input.metadata,
    createdAt: deps.clock.now().toISOString(),
    merchantClientId: caller.clientId,
    ...(input.paymentId ? { paymentId: input.paymentId } : {}),
  };
  const outcome = await putMapping(deps, record, input.requestId);
  if (!outcome.stored) {
    const { existing } = outcome;
    if (existing.receiptId === record.receiptId) return publicMapping(existing, receipt);
    throw new ConflictError('This transactionId is already mapped to another of your receipts', {
      field: 'envelope.transactionId',
    });
  }
  return publicMapping(record, receipt);
}

/**
 * Writes a mapping once per (merchant client, transactionId), audited when it is new; otherwise the
 * mapping already there, for the caller to accept or refuse. Used by POST /transactions and by
 * payment creation, which reserves the mapping before it charges.
 */
export async function putMapping(
  deps: Pick<TransactionDeps, 'repos' | 'audit'>,
  record: TransactionMappingRecord,
  requestId: string,
): Promise<{ stored: true } | { stored: false; existing: TransactionMappingRecord }> {
  const outcome = await deps.repos.transactions.putIfAbsent(record);
  if (outcome.stored) {
    await deps.audit.record({
      action: 'transaction.store',
      outcome: 'success',
      requestId,
      clientId: record.merchantClientId,
      receiptId: record.receiptId,
      transactionId: record.transactionId,
    });
  }
  return outcome;
}

/** The mapping's receipt when it is wrapped for a user of this issuer, else null. */
async function receiptForUserOf(
  deps: TransactionDeps,
  mapping: TransactionMappingRecord,
  issuerClientId: string,
): Promise<StoredReceipt | null> {
  const receipt = await deps.repos.receipts.get(mapping);
  const user = receipt?.recipientUserId ? await deps.repos.users.getById(receipt.recipientUserId) : null;
  return user?.clientId === issuerClientId ? receipt : null;
}

/**
 * A merchant reads its own mapping of the transactionId; an issuer reads a mapping (any merchant
 * client's) whose receipt is for one of its users, the newest when several are. 404 for anyone else.
 */
export async function getTransaction(
  deps: TransactionDeps,
  transactionId: string,
  caller: Caller,
): Promise<TransactionMapping> {
  if (caller.roles.includes('merchant')) {
    const own = await deps.repos.transactions.get({ merchantClientId: caller.clientId, transactionId });
    if (own) return publicMapping(own, await deps.repos.receipts.get(own));
  }
  if (caller.roles.includes('issuer')) {
    const candidates = await deps.repos.transactions.allWithTransactionId(transactionId);
    const readable = await Promise.all(
      candidates.map((mapping) => receiptForUserOf(deps, mapping, caller.clientId)),
    );
    const mine = candidates
      .map((mapping, index) => ({ mapping, receipt: readable[index] ?? null }))
      .filter((entry) => entry.receipt !== null)
      .sort((a, b) => b.mapping.createdAt.localeCompare(a.mapping.createdAt));
    if (mine[0]) return publicMapping(mine[0].mapping, mine[0].receipt);
  }
  throw new NotFoundError('No transaction with this transactionId', { field: 'transactionId' });
}
