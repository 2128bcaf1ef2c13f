import { epochSeconds } from '../kernel/clock.js';
import { dueBucketOf, type DeliveryRecord } from '../db/webhook-deliveries.js';
import type { WebhookRecord } from '../db/webhooks.js';
import { deliveryIdOf, eventsOf, payloadOf, type ReceiptEvent, type ReceiptStreamRecord } from './events.js';
import { attemptDelivery, type DeliveryDeps } from './send.js';

const RETENTION_SECONDS = 30 * 24 * 3_600;

/**
 * The look-ups of one batch, each made once: a batch is usually one issuer's or one merchant's
 * receipts, and without this every record would read the same user and webhooks again.
 */
function batchLookups(deps: DeliveryDeps) {
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
    audienceOf: (event: ReceiptEvent): Promise<string | null> =>
      event.type === 'receipt.escrowed'
        ? Promise.resolve(event.merchantClientId)
        : once(owners, event.userId, async () => (await deps.users.getById(event.userId))?.clientId ?? null),
    webhooksOf: (clientId: string): Promise<WebhookRecord[]> =>
      once(webhooks, clientId, () => deps.webhooks.listForClient(clientId)),
  };
}
type BatchLookups = ReturnType<typeof batchLookups>;

/** Writes one delivery per subscribed webhook; only the ones this call created are returned. */
async function createDeliveries(
  deps: DeliveryDeps,
  lookups: BatchLookups,
  event: ReceiptEvent,
): Promise<DeliveryRecord[]> {
  const clientId = await lookups.audienceOf(event);
  if (!clientId) return [];
  const webhooks = (await lookups.webhooksOf(clientId)).filter((webhook) =>
    (webhook.events as readonly string[]).includes(event.type),
  );
  const now = deps.clock.now();
  const created: DeliveryRecord[] = [];
  for (const webhook of webhooks) {
    const deliveryId = deliveryIdOf(webhook.webhookId, event);
    const delivery: DeliveryRecord = {
      webhookId: webhook.webhookId,
      deliveryId,
      clientId,
      eventType: event.type,
      payload: payloadOf(event, now),
      status: 'pending',
      attemptCount: 0,
      scheduledFrom: 0,
      attempts: [],
      // Due at once: should the immediate attempt below never happen, the sweeper makes it.
      nextAttemptAt: now.toISOString(),
      dueBucket: dueBucketOf(deliveryId),
      createdAt: now.toISOString(),
      ttl: epochSeconds(now) + RETENTION_SECONDS,
    };
    if (await deps.deliveries.create(delivery)) created.push(delivery);
  }
  return created;
}

export interface ProcessedBatch {
  /** The first record whose deliveries could not be written, and so everything after it: retry from here. */
  failedSequenceNumber?: string;
  deliveriesCreated: number;
}

/**
 * The receipts stream's records, in order: each raises its events, each event a delivery per
 * subscribed webhook (idempotent by its deterministic id, so a record read again adds nothing), and
 * every new delivery is then attempted once. Only writing a delivery can fail the batch: an attempt
 * that fails is the schedule's business, not the stream's.
 */
export async function processReceiptRecords(
  records: readonly ReceiptStreamRecord[],
  deps: DeliveryDeps,
): Promise<ProcessedBatch> {
  const created: DeliveryRecord[] = [];
  const lookups = batchLookups(deps);
  let failedSequenceNumber: string | undefined;
  for (const record of records) {
    try {
      for (const event of eventsOf(record)) created.push(...(await createDeliveries(deps, lookups, event)));
    } catch (error) {
      deps.logger.error('webhook deliveries could not be written for a receipt change', {
        sequenceNumber: record.dynamodb?.SequenceNumber,
        error: error instanceof Error ? error.name : 'unknown',
      });
      failedSequenceNumber = record.dynamodb?.SequenceNumber;
      break;
    }
  }
  await Promise.all(
    created.map((delivery) =>
      attemptDelivery(deps, delivery).catch((error: unknown) => {
        // The delivery is stored and due: the sweeper makes the attempt this one could not.
        deps.logger.warn('first webhook attempt not made', {
          webhookId: delivery.webhookId,
          deliveryId: delivery.deliveryId,
          error: error instanceof Error ? error.name : 'unknown',
        });
      }),
    ),
  );
  return { deliveriesCreated: created.length, ...(failedSequenceNumber ? { failedSequenceNumber } : {}) };
}
