import type { FunctionDefinition } from '../../../lib/kernel/route.js';

/**
 * The receipts stream's consumer (functions/webhooks/webhook-dispatch): looks up the event's audience and
 * subscribed webhooks, writes deliveries, makes each first attempt. Its stream read is granted apart.
 */
export const webhookDispatchFunction = {
  name: 'webhook-dispatch',
  entry: 'functions/webhooks/webhook-dispatch/handler.ts',
  tables: { users: 'read', webhooks: 'read', webhookDeliveries: 'readWrite' },
  // A batch's first attempts run together, each allowed the receiver's 10 s.
  timeoutSeconds: 60,
} as const satisfies FunctionDefinition;

/** The dispatcher's stream settings, read by the stack and its tests. */
export const dispatchStream = {
  batchSize: 25,
  /** Retries of a failing batch (halved each time) before its records go to the dead-letter queue. */
  retryAttempts: 5,
  maxRecordAgeHours: 24,
} as const;
