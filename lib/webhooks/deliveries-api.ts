import type { DeliveryRecord, WebhookDeliveryRepository } from '../db/webhook-deliveries.js';
import type { WebhookRecord, WebhookRepository } from '../db/webhooks.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../kernel/errors.js';
import { attemptClaimed, leaseFrom, type DeliveryDeps } from './send.js';

/** What the API shows of a delivery: never the payload's bytes, the secret or the claim lease. */
export const deliveryView = (delivery: DeliveryRecord) => ({
  deliveryId: delivery.deliveryId,
  webhookId: delivery.webhookId,
  eventType: delivery.eventType as 'receipt.available' | 'receipt.escrowed' | 'receipt.updated',
  status: delivery.status,
  attemptCount: delivery.attemptCount,
  nextAttemptAt: delivery.status === 'pending' ? (delivery.nextAttemptAt ?? null) : null,
  attempts: delivery.attempts.map((attempt) => ({
    at: attempt.at,
    durationMs: attempt.durationMs,
    ...(attempt.httpStatus !== undefined ? { httpStatus: attempt.httpStatus } : {}),
    ...(attempt.error !== undefined ? { error: attempt.error } : {}),
  })),
  createdAt: delivery.createdAt,
});

/** The caller's own webhook, or the 404 an unknown one gets: another client's is indistinguishable. */
export async function ownWebhook(
  webhooks: Pick<WebhookRepository, 'get'>,
  webhookId: string,
  clientId: string,
): Promise<WebhookRecord> {
  const webhook = await webhooks.get(webhookId);
  if (!webhook || webhook.clientId !== clientId) throw new NotFoundError('No such webhook');
  return webhook;
}

interface CursorKey {
  webhookId: string;
  deliveryId: string;
  createdAt: string;
}

const encodeCursor = (key: Record<string, string>): string =>
  Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');

/** The cursor is the index position it was made from, for this webhook only. */
function decodeCursor(cursor: string, webhookId: string): CursorKey {
  const refuse = () =>
    new InvalidRequestError('Invalid cursor', [{ field: 'cursor', message: 'is not a cursor of this list' }]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  const key = parsed as Partial<CursorKey> | null;
  if (
    typeof key !== 'object' ||
    key === null ||
    key.webhookId !== webhookId ||
    typeof key.deliveryId !== 'string' ||
    typeof key.createdAt !== 'string' ||
    Object.keys(key).length !== 3
  )
    throw refuse();
  return { webhookId, deliveryId: key.deliveryId, createdAt: key.createdAt };
}

export async function listDeliveries(
  repos: { webhooks: Pick<WebhookRepository, 'get'>; deliveries: WebhookDeliveryRepository },
  input: { webhookId: string; clientId: string; limit: number; cursor?: string | undefined },
) {
  await ownWebhook(repos.webhooks, input.webhookId, input.clientId);
  const startKey = input.cursor ? decodeCursor(input.cursor, input.webhookId) : undefined;
  const page = await repos.deliveries.listForWebhook(
    input.webhookId,
    input.limit,
    startKey as Record<string, string> | undefined,
  );
  return {
    deliveries: page.deliveries.map(deliveryView),
    nextCursor: page.lastKey ? encodeCursor(page.lastKey) : null,
  };
}

/**
 * A manual retry: the delivery starts a fresh schedule, due now, and is attempted at once. Another
 * attempt under way (its claim not yet recorded) makes this a 409 rather than a second send.
 */
export async function retryDelivery(
  deps: DeliveryDeps,
  input: { webhookId: string; deliveryId: string; clientId: string },
) {
  await ownWebhook(deps.webhooks, input.webhookId, input.clientId);
  const key = { webhookId: input.webhookId, deliveryId: input.deliveryId };
  const delivery = await deps.deliveries.get(key);
  if (!delivery || delivery.clientId !== input.clientId) throw new NotFoundError('No such delivery');
  const at = deps.clock.now();
  const restarted = await deps.deliveries.restart(key, delivery.attemptCount, at, leaseFrom(at));
  const attempted = restarted ? await attemptClaimed(deps, restarted, at) : null;
  if (!attempted) throw new ConflictError('Another attempt of this delivery is under way');
  return deliveryView(attempted);
}
