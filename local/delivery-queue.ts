import {
  deduplicationIdOf,
  deliverQueued,
  type DeliveryMessage,
  type DeliveryQueue,
} from '../lib/webhooks/queue.js';
import type { DeliveryDeps } from '../lib/webhooks/send.js';

/** SQS FIFO's deduplication window, which this stand-in keeps too. */
const DEDUPLICATION_MS = 5 * 60_000;

/**
 * The local stand-in for the SQS FIFO delivery queue, with its per-destination behaviour: one
 * webhook's attempts are made one at a time, in the order queued, and every other webhook's
 * meanwhile (a chain of promises per webhook, as SQS hands out one message group at a time), by the
 * same lib/webhooks/queue.ts code the queue's Lambda runs. The same attempt queued twice within five
 * minutes (by the injected clock) is made once. In memory: an attempt lost with the process stays due
 * and the sweeper queues it again, as it would for a lost message in AWS.
 */
export class LocalDeliveryQueue implements DeliveryQueue {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly queuedAt = new Map<string, number>();

  constructor(private readonly deps: DeliveryDeps) {}

  async enqueue(messages: readonly DeliveryMessage[]): Promise<void> {
    const now = this.deps.clock.now().getTime();
    for (const [id, at] of this.queuedAt) if (now - at >= DEDUPLICATION_MS) this.queuedAt.delete(id);
    for (const message of messages) {
      const id = deduplicationIdOf(message);
      if (this.queuedAt.has(id)) continue;
      this.queuedAt.set(id, now);
      const previous = this.chains.get(message.webhookId) ?? Promise.resolve();
      const next = previous.then(() => this.deliver(message));
      this.chains.set(message.webhookId, next);
      void next.then(() => {
        if (this.chains.get(message.webhookId) === next) this.chains.delete(message.webhookId);
      });
    }
  }

  /** Until every attempt queued so far has been made (each bounded by its 10 s timeout). */
  async drain(): Promise<void> {
    while (this.chains.size > 0) await Promise.all(this.chains.values());
  }

  private async deliver(message: DeliveryMessage): Promise<void> {
    try {
      await deliverQueued(this.deps, message);
    } catch (error) {
      // As a message SQS gives again: the delivery stays due, and the sweeper queues it.
      this.deps.logger.warn('queued webhook attempt not made; it stays due', {
        webhookId: message.webhookId,
        deliveryId: message.deliveryId,
        error: error instanceof Error ? error.name : 'unknown',
      });
    }
  }
}
