import { createHash } from 'node:crypto';
import { requireTable } from '../../../lib/kernel/config.js';
import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import {
  createPaymentWithReceipt,
  idempotencyBody,
  openedFromStore,
  repeatedPaymentConflict,
  storedForRepeats,
  type StoredPaymentResult,
} from '../../../lib/payments/create.js';
import { idempotent } from '../../../lib/payments/idempotency.js';
import { createPaymentRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

type CreatePaymentInput = Parameters<typeof createPaymentWithReceipt>[1];

/**
 * POST /api/v1/payments/{gateway}/create — encrypt the receipt, charge it on the gateway, map it.
 * The same receiptId (or Idempotency-Key) returns the first result and never charges again.
 */
export const createHandler = (deps: AppDeps) => {
  // The result kept for repeats holds the clientSecret sealed; the caller gets it opened.
  const once = idempotent<CreatePaymentInput, StoredPaymentResult>(
    deps.dynamo,
    requireTable(deps.config, 'idempotency'),
    async (input) => storedForRepeats(deps, await createPaymentWithReceipt(deps, input)),
  );
  return httpEndpoint(route, deps, async (request) => {
    const kind = request.params.gateway;
    const idempotencyKey = request.headers['Idempotency-Key'];
    const key = `${request.caller.clientId}:${idempotencyKey ?? `receipt:${request.body.receiptId}`}`;
    const input = {
      kind,
      body: request.body,
      caller: request.caller,
      requestId: request.meta.requestId,
      reservationKey: createHash('sha256').update(key).digest('hex'),
      signature: request.headers['Receipt-Signature'],
    };
    return {
      data: await openedFromStore(
        deps,
        await once.run(
          {
            key,
            body: await idempotencyBody(deps, kind, request.body),
            payload: input,
            mismatch: (first) => repeatedPaymentConflict(first, idempotencyKey !== undefined),
          },
          request.lambdaContext,
        ),
      ),
    };
  });
};

export const handler = awsHandler(route, createHandler);
