import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import type { DispatchDeps } from '../../../lib/webhooks/queue.js';
import { sweepDueDeliveries } from '../../../lib/webhooks/sweep.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';
import { awsDeliveryQueue } from '../../../lib/wiring/aws-delivery-queue.js';

/**
 * Every minute (EventBridge schedule, infra/webhook-delivery.ts): the deliveries whose next attempt is
 * due are queued on the delivery queue, never attempted here.
 */
export const createHandler =
  (deps: DispatchDeps, flush: () => void = () => undefined) =>
  async (): Promise<{ due: number; queued: number }> => {
    try {
      return await sweepDueDeliveries(deps);
    } finally {
      flush();
    }
  };

let handle: ReturnType<typeof createHandler> | undefined;

let building: Promise<ReturnType<typeof createHandler>> | undefined;

export const handler = async (): Promise<{ due: number; queued: number }> => {
  handle ??= await (building ??= awsCoreDeps().then((core) => {
    const queue = awsDeliveryQueue(core.config.region, core.tracer);
    return createHandler({ ...deliveryDeps(core), queue }, () => core.telemetry.flush());
  }));
  return handle();
};
