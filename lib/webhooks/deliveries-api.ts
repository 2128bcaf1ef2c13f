import type { DeliveryRecord, WebhookDeliveryRepository } from '../db/webhook-deliveries.js';
import type { WebhookEvent, WebhookRecord, WebhookRepository } from '../db/webhooks.js';
import type { CursorCodec, CursorScope, PageKeyShape } from '../crypto/cursor.js';
import { ConflictError, NotFoundError } from '../kernel/errors.js';
import { attemptClaimed, leaseFrom, type DeliveryDeps } from './send.js';

/** What the API shows of a delivery: never the payload's bytes, the secret or the claim lease. */
export const deliveryView = (delivery: DeliveryRecord) => ({
  deliveryId: delivery.deliveryId,
  webhookId: delivery.webhookId,
  eventType: delivery.eventType as WebhookEvent,
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

/** The cursor seals the by-webhook index position a page ended at, for this webhook and client. */
const DELIVERY_PAGE_KEY: PageKeyShape = {
  names: ['webhookId', 'deliveryId', 'createdAt'],
  resourceAttribute: 'webhookId',
};

export async function listDeliveries(
  deps: {
    webhooks: Pick<WebhookRepository, 'get'>;
    deliveries: WebhookDeliveryRepository;
    cursors: CursorCodec;
  },
  input: { webhookId: string; clientId: string; limit: number; cursor?: string | undefined },
) {
  await ownWebhook(deps.webhooks, input.webhookId, input.clientId);
  const scope: CursorScope = {
    list: 'webhook-deliveries',
    resourceId: input.webhookId,
    clientId: input.clientId,
  };
  const startKey =
    input.cursor === undefined ? undefined : await deps.cursors.open(input.cursor, scope, DELIVERY_PAGE_KEY);
  const page = await deps.deliveries.listForWebhook(input.webhookId, input.limit, startKey);
  return {
    deliveries: page.deliveries.map(deliveryView),
    nextCursor: page.lastKey ? await deps.cursors.seal(scope, page.lastKey) : null,
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
