import type { FunctionDefinition } from '../../../lib/kernel/route.js';

/** The scheduled sweeper (functions/webhooks/webhook-sweep): attempts the due deliveries, a bounded batch a run. */
export const webhookSweepFunction = {
  name: 'webhook-sweep',
  entry: 'functions/webhooks/webhook-sweep/handler.ts',
  tables: { webhooks: 'read', webhookDeliveries: 'readWrite' },
  // Shorter than an attempt's claim lease (lib/webhooks/send.ts), so a live attempt is never taken over.
  timeoutSeconds: 60,
} as const satisfies FunctionDefinition;
