import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { processReceiptRecords } from '../../../lib/webhooks/dispatch.js';
import type { ReceiptStreamRecord } from '../../../lib/webhooks/events.js';
import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import type { DeliveryDeps } from '../../../lib/webhooks/send.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';

/**
 * The receipts table's stream (event source mapping, infra/webhook-delivery.ts). A record whose
 * deliveries cannot be written is reported, with everything after it, so Lambda retries from there
 * (reportBatchItemFailures); what still fails goes to the dead-letter queue.
 */
export const createHandler =
  (deps: DeliveryDeps, flush: () => void = () => undefined) =>
  async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
    try {
      const result = await processReceiptRecords(event.Records as ReceiptStreamRecord[], deps);
      return {
        batchItemFailures: result.failedSequenceNumber
          ? [{ itemIdentifier: result.failedSequenceNumber }]
          : [],
      };
    } finally {
      flush();
    }
  };

let handle: ReturnType<typeof createHandler> | undefined;

let building: Promise<ReturnType<typeof createHandler>> | undefined;

export const handler = async (event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => {
  handle ??= await (building ??= awsCoreDeps().then((core) =>
    createHandler(deliveryDeps(core), () => core.telemetry.flush()),
  ));
  return handle(event);
};
