import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context } from 'aws-lambda';
import type { DynamoClients } from '../db/client.js';
import { ConflictError } from '../kernel/errors.js';

export interface IdempotentCall<Input, Output> {
  run(
    input: {
      key: string;
      body: unknown;
      payload: Input;
      /**
       * The 409 for a repeat with a different body, given the first call's result when it has one;
       * without it, the error blames a reused Idempotency-Key.
       */
      mismatch?: (first: Output | undefined) => Error;
    },
    context: Context,
  ): Promise<Output>;
}

/**
 * Powertools idempotency around a function (its function wrapper, not the Middy middleware): the
 * first result for a key is stored and returned to every repeat; a failed call leaves nothing behind,
 * so the caller can retry; a repeat with a different body, or one that arrives while the first is
 * still running, is a 409.
 */
export function idempotent<Input, Output>(
  dynamo: DynamoClients,
  tableName: string,
  fn: (payload: Input) => Promise<Output>,
  options: { expiresAfterSeconds?: number } = {},
): IdempotentCall<Input, Output> {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'key',
    payloadValidationJmesPath: 'body',
    expiresAfterSeconds: options.expiresAfterSeconds ?? 86_400,
    throwOnNoIdempotencyKey: true,
  });
  const wrapped = makeIdempotent(
    async (input: { key: string; body: unknown; payload: Input }) => fn(input.payload),
    {
      persistenceStore: new DynamoDBPersistenceLayer({ tableName, awsSdkV3Client: dynamo.client }),
      config,
    },
  );
  return {
    async run(input, context) {
      // The remaining time bounds how long an in-progress record can block a retry after a crash.
      config.registerLambdaContext(context);
      try {
        const { mismatch: _mismatch, ...event } = input;
        return (await wrapped(event as never)) as Output;
      } catch (error) {
        if (error instanceof IdempotencyAlreadyInProgressError) {
          throw new ConflictError('The same request is still being processed; retry shortly', {
            retryable: true,
          });
        }
        if (error instanceof IdempotencyValidationError) {
          const first = (error.existingRecord?.getResponse() ?? undefined) as Output | undefined;
          throw (
            input.mismatch?.(first) ??
            new ConflictError('This idempotency key was already used with a different request body', {
              field: 'Idempotency-Key',
            })
          );
        }
        throw error;
      }
    },
  };
}
