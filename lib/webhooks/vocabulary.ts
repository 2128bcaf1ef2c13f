import { AppError } from '../kernel/errors.js';

/**
 * The webhooks feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    WebhookLimitError: WebhookLimitError;
  }
}

declare module '../kernel/telemetry.js' {
  interface MetricDimensions {
    /** A webhook delivery given up: its back-off schedule ran out, or its URL was refused at delivery. */
    WebhookDeliveriesFailed: Record<string, never>;
  }
}

declare module '../db/audit.js' {
  interface AuditKinds {
    'webhook.create': true;
    'webhook.delete': true;
    'webhook.rotate-secret': true;
  }
}

/** A client already has as many webhooks as it may register. */
export class WebhookLimitError extends AppError<409> {
  readonly status = 409 as const;
  readonly code = 'WEBHOOK_LIMIT_REACHED';
  constructor(limit: number) {
    super(`A client may register at most ${limit} webhooks: delete one first`, { limit });
  }
}
