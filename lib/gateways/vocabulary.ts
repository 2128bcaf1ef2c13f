import { AppError } from '../kernel/errors.js';

/**
 * The gateways feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    InvalidSignatureError: InvalidSignatureError;
    PaymentDeclinedError: PaymentDeclinedError;
    GatewayError: GatewayError;
  }
}

/**
 * A gateway event whose signature is missing, wrong or too old (lib/gateways verifies it with the
 * provider's SDK). The message is the same whatever failed: a forger learns nothing from it.
 */
export class InvalidSignatureError extends AppError<401> {
  readonly status = 401 as const;
  readonly code = 'invalid_signature';
  constructor() {
    super('The event signature is missing, not valid, or too old');
  }
}

export class PaymentDeclinedError extends AppError<402> {
  readonly status = 402 as const;
  readonly code = 'PAYMENT_DECLINED';
}

export class GatewayError extends AppError<502> {
  readonly status = 502 as const;
  readonly code = 'GATEWAY_ERROR';
}
