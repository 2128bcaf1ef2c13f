import { randomUUID } from 'node:crypto';
import type { PlatformDeps } from '../app/deps.js';
import type { Middleware } from './context.js';
import { errorResponse } from './error-envelope.js';

/** Last in the chain: every error, ours or Middy's, becomes the documented envelope. */
export function errorEnvelope(deps: PlatformDeps): Middleware {
  return {
    onError: (request) => {
      const requestId = request.context.meta?.requestId ?? randomUUID();
      request.response = errorResponse(request.error, requestId, deps.clock.now(), deps.logger);
    },
  };
}
