import { messageOf, QUEUE_LEASE_MS, type DeliveryMessage, type DispatchDeps } from './queue.js';

/** Deliveries a sweep queues at most: one run reads one page of what is due. */
export const SWEEP_BATCH = 250;

/**
 * Queues the pending deliveries that are due (lib/webhooks/queue.ts), at most `limit`; it makes no
 * attempt itself, so no receiver can hold it up. Each is marked queued first, on the attempt count
 * and due time it was read with, so sweeps that overlap queue it once, and it is due again only if
 * its message is not taken within QUEUE_LEASE_MS.
 */
export async function sweepDueDeliveries(
  deps: DispatchDeps,
  limit: number = SWEEP_BATCH,
): Promise<{ due: number; queued: number }> {
  const now = deps.clock.now();
  const due = await deps.deliveries.due(now, limit);
  const marked = await Promise.all(
    due.map((delivery) =>
      deps.deliveries.markQueued(
        delivery,
        delivery.attemptCount,
        now,
        new Date(now.getTime() + QUEUE_LEASE_MS),
      ),
    ),
  );
  const messages: DeliveryMessage[] = due.filter((_, index) => marked[index]).map(messageOf);
  if (messages.length > 0) await deps.queue.enqueue(messages);
  return { due: due.length, queued: messages.length };
}
