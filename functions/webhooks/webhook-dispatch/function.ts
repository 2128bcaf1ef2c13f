import type { FunctionDefinition } from '../../../lib/kernel/route.js';

/**
 * The receipts stream's consumer (functions/webhooks/webhook-dispatch): looks up the event's audience and
 * subscribed webhooks and queues each delivery's first attempt, the message carrying the delivery (it
 * writes no table, and never makes an attempt: a receiver, slow or not, is never waited for here). Its
 * stream read is granted apart.
 */
export const webhookDispatchFunction = {
  name: 'webhook-dispatch',
  entry: 'functions/webhooks/webhook-dispatch/handler.ts',
  tables: { users: 'read', webhooks: 'read' },
  // A batch's DynamoDB reads and queue sends, retried by the SDK when throttled, with room to spare.
  timeoutSeconds: 60,
} as const satisfies FunctionDefinition;

/** The dispatcher's stream settings, read by the stack and its tests. */
export const dispatchStream = {
  batchSize: 25,
  /**
   * Batches of one shard processed at once (Lambda's ParallelizationFactor, 1–10; records of one item
   * stay in order). A batch is ~100 ms of DynamoDB writes and queue sends, so four drain the 1,000
   * records a second a shard can take (docs/SCALE.md, "The receipts stream").
   */
  parallelizationFactor: 4,
  /** Retries of a failing batch (halved each time) before its records go to the dead-letter queue. */
  retryAttempts: 5,
  maxRecordAgeHours: 24,
} as const;
