import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { dispatchReceiptStream } from '../../../lib/webhooks/dispatch.js';
import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import type { DispatchDeps } from '../../../lib/webhooks/queue.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';
import { awsDeliveryQueue } from '../../../lib/wiring/aws-delivery-queue.js';

/**
 * The receipts table's stream (event source mapping, infra/webhook-delivery.ts): deliveries written,
 * first attempts queued on the delivery queue (Powertools batch processing reports a record that
 * failed, and Lambda retries from it; what still fails goes to the dead-letter queue).
 */
export const createHandler =
  (deps: DispatchDeps, flush: () => void = () => undefined) =>
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
    return createHandler({ ...deliveryDeps(core), queue }, () => core.telemetry.flush());
  }));
  return handle(event);
};
