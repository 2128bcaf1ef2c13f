import { attemptDelivery, type DeliveryDeps } from './send.js';

/** Deliveries a sweep attempts at most: one sweep's work stays inside its function's timeout. */
export const SWEEP_BATCH = 50;

/**
 * Attempts the pending deliveries that are due, at most `limit`, all at once. Each attempt is claimed
 * first (lib/db/webhook-deliveries.ts), so sweeps that overlap never send the same attempt twice.
 */
export async function sweepDueDeliveries(
  deps: DeliveryDeps,
  limit: number = SWEEP_BATCH,
): Promise<{ due: number; attempted: number }> {
  const now = deps.clock.now();
  const due = await deps.deliveries.due(now, limit);
  const attempted = await Promise.all(
    due.map((delivery) =>
      attemptDelivery(deps, delivery, { dueBy: now }).catch((error: unknown) => {
        deps.logger.warn('webhook attempt not made; it stays due', {
          webhookId: delivery.webhookId,
          deliveryId: delivery.deliveryId,
          error: error instanceof Error ? error.name : 'unknown',
        });
        return null;
      }),
    ),
  );
  return { due: due.length, attempted: attempted.filter((result) => result !== null).length };
}
