import { PayloadTooLargeError } from '../kernel/errors.js';
import type { Middleware } from './context.js';

/** Refuses a body over the limit before anything parses it. */
export function bodySizeLimit(maxBytes: number): Middleware {
  return {
    before: (request) => {
      const body = request.event.body;
      if (
        typeof body === 'string' &&
        Buffer.byteLength(body, request.event.isBase64Encoded ? 'base64' : 'utf8') > maxBytes
      ) {
        throw new PayloadTooLargeError(maxBytes);
      }
    },
  };
}
