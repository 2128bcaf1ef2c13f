import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import { deliverQueueBatch } from '../../../lib/webhooks/queue.js';
import type { DeliveryDeps } from '../../../lib/webhooks/send.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';

/**
 * The delivery queue (SQS FIFO, grouped by webhook; infra/webhook-delivery.ts): each message's
 * attempt, claimed on its attempt count, sent, recorded (Powertools batch processing reports a
 * message whose attempt could not be recorded, and SQS gives it again).
 */
export const createHandler =
  (deps: DeliveryDeps, flush: () => void = () => undefined) =>
  async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      return await deliverQueueBatch(event, deps);
    } finally {
      flush();
    }
  };

let handle: ReturnType<typeof createHandler> | undefined;
let building: Promise<ReturnType<typeof createHandler>> | undefined;

export const handler = async (event: SQSEvent): Promise<SQSBatchResponse> => {
  handle ??= await (building ??= awsCoreDeps().then((core) =>
    createHandler(deliveryDeps(core), () => core.telemetry.flush()),
  ));
  return handle(event);
};
