import { AppError } from '../kernel/errors.js';

/**
 * The access feature's vocabulary: the errors it throws, the metrics it counts and the audit kinds it
 * writes, each registered into the kernel's catalogue by declaration merging (the blocks below). A new
 * one is added here, never under lib/kernel/, in lib/db/audit.ts or in lib/openapi/.
 */
declare module '../kernel/errors.js' {
  interface ErrorRegistry {
    GrantForbiddenError: GrantForbiddenError;
    GrantLimitError: GrantLimitError;
  }
}

declare module '../kernel/telemetry.js' {
  interface MetricDimensions {
    /** A grant refused because the user already holds the maximum number of live tokens. */
    GrantLimitRefusals: Record<string, never>;
  }
}

declare module '../db/audit.js' {
  interface AuditKinds {
    'access.grant': true;
    'access.revoke': true;
  }
}

/** Grant refused because the user or key is not the caller's, or the pair does not match. */
export class GrantForbiddenError extends AppError<403> {
  readonly status = 403 as const;
  readonly code = 'GRANT_ERROR';
  constructor() {
    super('Failed to grant access: the user and key are not a registered pair of this client');
  }
}

/** A user already holds the maximum number of live tokens. */
export class GrantLimitError extends AppError<429> {
  readonly status = 429 as const;
  readonly code = 'GRANT_ERROR';
  constructor(retryAfterSeconds: number, maxActive: number) {
    super(`Failed to grant access: at most ${maxActive} access tokens may be active per user`, undefined, {
      'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
  }
}
