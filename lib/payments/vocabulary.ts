import { AppError } from '../kernel/errors.js';
import type { GatewayKind } from '../kernel/gateway-kind.js';

/**
 * The payments feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    RefundExceedsPaymentError: RefundExceedsPaymentError;
  }
}

declare module '../kernel/telemetry.js' {
  interface MetricDimensions {
    /** A payment the gateway declined or failed to make. */
    PaymentFailures: { gateway: GatewayKind; outcome: PaymentFailure };
    /** A refund recorded: asked of the service, or made at the provider (its dashboard) and told by its event. */
    RefundsRecorded: { gateway: GatewayKind; source: 'api' | 'gateway' };
    /** A gateway event refused: its signature missing or wrong, or dated too old or ahead (a forgery, a flood, or a misconfigured secret). Never audited. */
    GatewayEventsRefused: { gateway: GatewayKind };
    /** A provider's refund event refused: its currency is not its payment's (alarmed: infra/monitoring.ts). */
    RefundCurrencyMismatches: Record<string, never>;
    /** A payment's network references left out of its receipt: a claim or key change came between charge and seal. */
    CardReferencesNotSealed: Record<string, never>;
  }
}

declare module '../db/audit.js' {
  interface AuditKinds {
    'payment.create': true;
    'payment.decrypt': true;
    'payment.status': true;
    'payment.refund': true;
    'gateway.event': true;
  }
}

/** Declined by the card's issuer, refused by the provider as a request (4xx), or the provider failing. */
export type PaymentFailure = 'declined' | 'refused' | 'error';

/** A refund larger than what is left of the payment; refused before the gateway is called. */
export class RefundExceedsPaymentError extends AppError<400> {
  readonly status = 400 as const;
  readonly code = 'REFUND_EXCEEDS_PAYMENT';
  constructor(requested: number, refundable: number, paymentStatus: string) {
    super(`The refund (${requested}) is more than the payment's refundable remainder (${refundable})`, {
      requested,
      refundable,
      paymentStatus,
      fields: [{ field: 'amount', message: `must be at most the refundable remainder (${refundable})` }],
    });
  }
}
