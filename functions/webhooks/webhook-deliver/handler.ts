import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import { deliverQueueBatch } from '../../../lib/webhooks/queue.js';
import type { DeliveryDeps } from '../../../lib/webhooks/send.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';
import { deliveryQueue } from './function.js';

/** A message of the dead-letter queue (its ARN ends in the queue's name), not of the delivery queue. */
const deadLettered = (record: SQSRecord): boolean =>
  record.eventSourceARN.endsWith(`-${deliveryQueue.deadLetterQueueName}`);

/**
 * The delivery queue (SQS FIFO, grouped by webhook; infra/webhook-delivery.ts): each message's
 * attempt, sent and recorded (Powertools batch processing reports a message whose attempt could not
 * be recorded, and SQS gives it again); and its dead-letter queue: each message's delivery recorded
 * due (lib/webhooks/queue.ts).
 */
export const createHandler =
  (deps: DeliveryDeps, flush: () => void = () => undefined) =>
  async (event: SQSEvent): Promise<SQSBatchResponse> => {
    try {
      return await deliverQueueBatch(event, deps, deadLettered);
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
