import { randomUUID } from 'node:crypto';
import type { PlatformDeps } from '../app/deps.js';
import type { Middleware } from './context.js';
import { errorResponse } from './error-envelope.js';

/**
 * Last in the chain: every error, ours or Middy's, becomes the documented envelope, and the answers
 * the alarms watch are counted (published by the observability middleware, which runs after it).
 */
export function errorEnvelope(deps: Pick<PlatformDeps, 'clock' | 'logger' | 'telemetry'>): Middleware {
  return {
    onError: (request) => {
      const requestId = request.context.meta?.requestId ?? randomUUID();
      request.response = errorResponse(
        request.error,
        requestId,
        deps.clock.now(),
        deps.logger,
        deps.telemetry,
      );
    },
  };
}
