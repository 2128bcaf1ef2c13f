import { createHash } from 'node:crypto';
import type { CoreDeps } from '../app/deps.js';
import { newDelivery } from '../db/webhook-deliveries.js';
import type { WebhookEvent } from '../db/webhooks.js';
import { base32 } from './base32.js';

export type AnnounceDeps = { repos: Pick<CoreDeps['repos'], 'webhooks' | 'webhookDeliveries'> } & Pick<
  CoreDeps,
  'clock'
>;

/**
 * Tells one client of something about itself that no receipt carries (a change of its signing keys):
 * a pending delivery per subscribed webhook, due now, which the sweeper queues and the queue sends
 * like any other (signed, retried, listed). `eventKey` names the change, so announcing it twice
 * writes one delivery per webhook.
 */
export async function announceToClient(
  deps: AnnounceDeps,
  input: { clientId: string; type: WebhookEvent; eventKey: string; data: Record<string, unknown> },
): Promise<number> {
  const webhooks = (await deps.repos.webhooks.listForClient(input.clientId)).filter((webhook) =>
    (webhook.events as readonly string[]).includes(input.type),
  );
  const now = deps.clock.now();
  for (const webhook of webhooks) {
    const digest = createHash('sha256')
      .update([webhook.webhookId, input.type, input.clientId, input.eventKey].join('|'))
      .digest();
    const deliveryId = `msg_${base32(digest).slice(0, 26)}`;
    const payload = JSON.stringify({ type: input.type, timestamp: now.toISOString(), data: input.data });
    const delivery = newDelivery(
      { webhookId: webhook.webhookId, deliveryId, clientId: input.clientId, eventType: input.type, payload },
      now,
    );
    await deps.repos.webhookDeliveries.create(delivery);
  }
  return webhooks.length;
}
