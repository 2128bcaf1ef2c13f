import { AppError } from '../kernel/errors.js';

/**
 * The onboarding feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    KeyNotFoundError: KeyNotFoundError;
    AlreadyRegisteredError: AlreadyRegisteredError;
  }
}

declare module '../kernel/telemetry.js' {
  interface MetricDimensions {
    /** A registration answered 409: the card (or key) is already registered, maybe by another issuer. */
    RegisterConflicts: Record<string, never>;
    /** A card registered again by the client that erased its user within 30 days (claim allowance grind). */
    ReRegistrations: Record<string, never>;
  }
}

declare module '../db/audit.js' {
  interface AuditKinds {
    'key.generate': true;
    'key.import': true;
    'user.register': true;
    'user.register-conflict': true;
    'user.re-register': true;
  }
}

export class KeyNotFoundError extends AppError<404> {
  readonly status = 404 as const;
  readonly code = 'KEY_NOT_FOUND';
  constructor(message = 'No generated key pair has this keyId') {
    super(message);
  }
}

export class AlreadyRegisteredError extends AppError<409> {
  readonly status = 409 as const;
  readonly code = 'ALREADY_REGISTERED';
}
