import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type { WebhookRecord } from '../db/webhooks.js';
import { deliveryIdOf, eventsOf, payloadOf, type ReceiptEvent, type ReceiptStreamRecord } from './events.js';
import type { DeliveryMessage, DeliveryQueue } from './queue.js';
import type { DeliveryDeps } from './send.js';

/**
 * What the stream's dispatcher needs: the clock, who a receipt's event goes to, and the queue. Not the
 * deliveries table: a delivery's record is written with its first attempt's outcome, by the deliverer.
 */
export type StreamDispatchDeps = Pick<DeliveryDeps, 'clock' | 'users' | 'webhooks'> & {
  queue: DeliveryQueue;
};

/**
 * The look-ups of one batch, each made once: a batch is usually one issuer's or one merchant's
 * receipts, and without this every record would read the same user and webhooks again.
 */
function batchLookups(deps: StreamDispatchDeps) {
  const owners = new Map<string, Promise<string | null>>();
  const webhooks = new Map<string, Promise<WebhookRecord[]>>();
  const once = <T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> => {
    let value = cache.get(key);
    if (value === undefined) {
      value = load();
      cache.set(key, value);
    }
    return value;
  };
  return {
    /** The client an event goes to: the issuer owning the user, or the merchant client that stored it. */
    audienceOf: (event: ReceiptEvent): Promise<string | null> => {
      const userId =
        event.type === 'receipt.available' ||
        (event.type === 'receipt.updated' && event.audience === 'issuer')
          ? event.userId
          : undefined;
      if (userId === undefined) return Promise.resolve(event.merchantClientId);
      return once(owners, userId, async () => (await deps.users.getById(userId))?.clientId ?? null);
    },
    webhooksOf: (clientId: string): Promise<WebhookRecord[]> =>
      once(webhooks, clientId, () => deps.webhooks.listForClient(clientId)),
  };
}
type BatchLookups = ReturnType<typeof batchLookups>;

/**
 * The first-attempt message of one delivery per subscribed webhook, carrying the delivery (its id is
 * deterministic, so a record read again queues the same messages, which the queue's deduplication and
 * the consumer's look-up send once). Nothing is written here: the delivery's record is written with
 * its first attempt's outcome (lib/webhooks/queue.ts, deliverQueued).
 */
async function deliveriesOf(
  deps: StreamDispatchDeps,
  lookups: BatchLookups,
  event: ReceiptEvent,
): Promise<DeliveryMessage[]> {
  const clientId = await lookups.audienceOf(event);
  if (!clientId) return [];
  const webhooks = (await lookups.webhooksOf(clientId)).filter((webhook) =>
    (webhook.events as readonly string[]).includes(event.type),
  );
  const now = deps.clock.now();
  return webhooks.map((webhook) => ({
    webhookId: webhook.webhookId,
    deliveryId: deliveryIdOf(webhook.webhookId, event),
    attemptCount: 0,
    first: {
      clientId,
      eventType: event.type,
      payload: payloadOf(event, now),
      createdAt: now.toISOString(),
    },
  }));
}

/**
 * The receipts stream's records (Powertools batch processing, as the event source mapping delivers
 * them, and as the local poller hands them over): each raises its events, each event a delivery per
 * subscribed webhook, and each delivery's first attempt is queued (lib/webhooks/queue.ts), never
 * made here: a receiver that hangs delays nobody else's deliveries. A record whose deliveries could
 * not be queued is reported, and read again (Lambda retries from the first reported): until its
 * messages are in the queue the stream holds the event, and after, the queue does.
 */
export async function dispatchReceiptStream(
  event: DynamoDBStreamEvent,
  deps: StreamDispatchDeps,
): Promise<DynamoDBBatchResponse> {
  const lookups = batchLookups(deps);
  return processPartialResponse(
    event,
    async (record: DynamoDBRecord) => {
      const messages: DeliveryMessage[] = [];
      for (const receiptEvent of eventsOf(record as ReceiptStreamRecord))
        messages.push(...(await deliveriesOf(deps, lookups, receiptEvent)));
      if (messages.length > 0) await deps.queue.enqueue(messages);
    },
    new BatchProcessor(EventType.DynamoDBStreams),
    // Every record failing is a partial response like any other: Lambda reads on from the first.
    { throwOnFullBatchFailure: false },
  );
}
