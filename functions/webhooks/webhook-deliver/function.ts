import type { FunctionDefinition } from '../../../lib/kernel/route.js';

/**
 * The delivery queue's consumer (functions/webhooks/webhook-deliver): makes the attempt each message
 * names, and records due what the dead-letter queue receives. One message a call, one webhook's messages one at a time (SQS FIFO groups): a receiver that
 * hangs holds only its own deliveries, for at most an attempt's 10 s.
 */
export const webhookDeliverFunction = {
  name: 'webhook-deliver',
  entry: 'functions/webhooks/webhook-deliver/handler.ts',
  tables: { webhooks: 'read', webhookDeliveries: 'readWrite' },
  // One attempt (10 s at most) and its records, with room to spare.
  timeoutSeconds: 30,
} as const satisfies FunctionDefinition;

/** The queue's settings, read by the stack and its tests. */
export const deliveryQueue = {
  /** One message per invocation: a batch would make one webhook's attempt wait for another's. */
  batchSize: 1,
  /**
   * Receives of one message before it goes to the dead-letter queue, whose consumer (this function
   * again) records a first attempt's delivery due for the sweeper; a retry's record is due already.
   */
  maxReceiveCount: 5,
  /** The dead-letter queue's name after the stage prefix: the handler tells its messages apart by it. */
  deadLetterQueueName: 'webhook-deliveries-dlq.fifo',
  /** SQS's advice for a Lambda consumer: six times the function's timeout. */
  visibilityTimeoutSeconds: 180,
} as const;
