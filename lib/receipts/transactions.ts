import { randomUUID } from 'node:crypto';
import type { Caller } from '../api-key-auth.js';
import type { PaymentGatewayName, TransactionMappingRecord } from '../db/transactions.js';
import type { AppDeps } from '../deps.js';
import { ConflictError, NotFoundError } from '../errors.js';
import type { EnvelopeInput } from './schemas.js';

/** Spec: TransactionMapping — the stored record without who may read it. */
export type TransactionMapping = Omit<TransactionMappingRecord, 'merchantClientId' | 'paymentId'>;

type TransactionDeps = Pick<AppDeps, 'clock' | 'repos' | 'audit'>;

export const publicMapping = (record: TransactionMappingRecord): TransactionMapping => ({
  mappingId: record.mappingId,
  transactionId: record.transactionId,
  receiptId: record.receiptId,
  paymentGateway: record.paymentGateway,
  gatewayMetadata: record.gatewayMetadata,
  createdAt: record.createdAt,
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
 * wins: storing the same envelope again returns it; a different receipt for it is a conflict.
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
  const receipt = await deps.repos.receipts.get(envelope.receiptId);
  // Another merchant's receipt is reported exactly like a missing one.
  if (!receipt || receipt.merchantClientId !== caller.clientId) {
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
  const outcome = await deps.repos.transactions.putIfAbsent(record);
  if (!outcome.stored) {
    const { existing } = outcome;
    if (existing.receiptId === record.receiptId && existing.merchantClientId === caller.clientId)
      return publicMapping(existing);
    throw new ConflictError('This transactionId is already mapped to another receipt', {
      field: 'envelope.transactionId',
    });
  }
  await deps.audit.record({
    action: 'transaction.store',
    outcome: 'success',
    requestId: input.requestId,
    clientId: caller.clientId,
    receiptId: record.receiptId,
    transactionId: record.transactionId,
  });
  return publicMapping(record);
}

/** Readable by the merchant that stored it and by the issuer of the receipt's recipient; 404 for anyone else. */
export async function getTransaction(
  deps: TransactionDeps,
  transactionId: string,
  caller: Caller,
): Promise<TransactionMapping> {
  const notFound = () =>
    new NotFoundError('No transaction with this transactionId', { field: 'transactionId' });
  const mapping = await deps.repos.transactions.get(transactionId);
  if (!mapping) throw notFound();
  if (mapping.merchantClientId === caller.clientId && caller.roles.includes('merchant'))
    return publicMapping(mapping);
  if (caller.roles.includes('issuer')) {
    const receipt = await deps.repos.receipts.get(mapping.receiptId);
    const user = receipt?.recipientUserId ? await deps.repos.users.getById(receipt.recipientUserId) : null;
    if (user && user.clientId === caller.clientId) return publicMapping(mapping);
  }
  throw notFound();
}
