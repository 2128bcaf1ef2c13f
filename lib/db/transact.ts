import {
  TransactWriteCommand,
  type DynamoDBDocumentClient,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { isTransactionCanceled } from './client.js';

export type CancellationCode = 'ConditionalCheckFailed' | 'TransactionConflict' | 'None' | string;

export type TransactOutcome = { ok: true } | { ok: false; reasons: CancellationCode[] };

const reasonsOf = (error: unknown): CancellationCode[] =>
  ((error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? []).map(
    (reason) => reason.Code ?? 'None',
  );

/**
 * Runs a write transaction, retrying only while DynamoDB reports a conflict with a concurrent
 * transaction; a failed condition is returned to the caller with the per-item reasons.
 */
export async function transactWrite(
  doc: DynamoDBDocumentClient,
  input: TransactWriteCommandInput,
  attempts = 6,
): Promise<TransactOutcome> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await doc.send(new TransactWriteCommand(input));
      return { ok: true };
    } catch (error) {
      const conflict =
        (isTransactionCanceled(error) && reasonsOf(error).includes('TransactionConflict')) ||
        (error instanceof Error && error.name === 'TransactionConflictException');
      if (isTransactionCanceled(error) && (!conflict || attempt >= attempts)) {
        return { ok: false, reasons: reasonsOf(error) };
      }
      if (!conflict || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
    }
  }
}
