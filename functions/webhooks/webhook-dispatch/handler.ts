import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { dispatchReceiptStream, type StreamDispatchDeps } from '../../../lib/webhooks/dispatch.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';
import { awsDeliveryQueue } from '../../../lib/wiring/aws-delivery-queue.js';

/**
 * The receipts table's stream (event source mapping, infra/webhook-delivery.ts): each delivery's
 * first attempt queued on the delivery queue, the message carrying the delivery (Powertools batch processing reports a record that
 * failed, and Lambda retries from it; what still fails goes to the dead-letter queue).
 */
export const createHandler =
  (deps: StreamDispatchDeps, flush: () => void = () => undefined) =>
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    try {
      return await dispatchReceiptStream(event, deps);
    } finally {
      flush();
    }
  };

let handle: ReturnType<typeof createHandler> | undefined;

let building: Promise<ReturnType<typeof createHandler>> | undefined;

export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  handle ??= await (building ??= awsCoreDeps().then((core) => {
    const queue = awsDeliveryQueue(core.config.region, core.tracer);
    const deps: StreamDispatchDeps = {
      clock: core.clock,
      // Read on first use, like every repository here: only what a batch needs is built.
      users: { getById: (userId) => core.repos.users.getById(userId) },
      webhooks: core.repos.webhooks,
      queue,
    };
    return createHandler(deps, () => core.telemetry.flush());
  }));
  return handle(event);
};
