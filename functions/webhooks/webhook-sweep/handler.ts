import { deliveryDeps } from '../../../lib/webhooks/delivery-deps.js';
import type { DeliveryDeps } from '../../../lib/webhooks/send.js';
import { sweepDueDeliveries } from '../../../lib/webhooks/sweep.js';
import { awsCoreDeps } from '../../../lib/wiring/aws-core.js';

/** Every minute (EventBridge schedule, infra/webhook-delivery.ts): the deliveries whose next attempt is due. */
export const createHandler =
  (deps: DeliveryDeps, flush: () => void = () => undefined) =>
  async (): Promise<{ due: number; attempted: number }> => {
    try {
      return await sweepDueDeliveries(deps);
    } finally {
      flush();
    }
  };

let handle: ReturnType<typeof createHandler> | undefined;

let building: Promise<ReturnType<typeof createHandler>> | undefined;

export const handler = async (): Promise<{ due: number; attempted: number }> => {
  handle ??= await (building ??= awsCoreDeps().then((core) =>
    createHandler(deliveryDeps(core), () => core.telemetry.flush()),
  ));
  return handle();
};
