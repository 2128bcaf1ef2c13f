import { epochSeconds } from '../clock.js';
import { DUE_BUCKET, type DeliveryRecord } from '../db/webhook-deliveries.js';
import { deliveryIdOf, eventsOf, payloadOf, type ReceiptEvent, type ReceiptStreamRecord } from './events.js';
import { attemptDelivery, type DeliveryDeps } from './send.js';

const RETENTION_SECONDS = 30 * 24 * 3_600;

/** The client an event goes to: the issuer owning the user, or the merchant client that stored it. */
async function audienceOf(deps: DeliveryDeps, event: ReceiptEvent): Promise<string | null> {
  if (event.type === 'receipt.escrowed') return event.merchantClientId;
  return (await deps.users.getById(event.userId))?.clientId ?? null;
}

/** Writes one delivery per subscribed webhook; only the ones this call created are returned. */
async function createDeliveries(deps: DeliveryDeps, event: ReceiptEvent): Promise<DeliveryRecord[]> {
  const clientId = await audienceOf(deps, event);
  if (!clientId) return [];
  const webhooks = (await deps.webhooks.listForClient(clientId)).filter((webhook) =>
    (webhook.events as readonly string[]).includes(event.type),
  );
  const now = deps.clock.now();
  const created: DeliveryRecord[] = [];
  for (const webhook of webhooks) {
    const delivery: DeliveryRecord = {
      webhookId: webhook.webhookId,
      deliveryId: deliveryIdOf(webhook.webhookId, event),
      clientId,
      eventType: event.type,
      payload: payloadOf(event, now),
      status: 'pending',
      attemptCount: 0,
      scheduledFrom: 0,
      attempts: [],
      // Due at once: should the immediate attempt below never happen, the sweeper makes it.
      nextAttemptAt: now.toISOString(),
      dueBucket: DUE_BUCKET,
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
  let failedSequenceNumber: string | undefined;
  for (const record of records) {
    try {
      for (const event of eventsOf(record)) created.push(...(await createDeliveries(deps, event)));
    } catch (error) {
      deps.logger.error('webhook deliveries could not be written for a receipt change', {
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
          deliveryId: delivery.deliveryId,
          error: error instanceof Error ? error.name : 'unknown',
        });
      }),
    ),
  );
  return { deliveriesCreated: created.length, ...(failedSequenceNumber ? { failedSequenceNumber } : {}) };
}
