import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Logger } from '../kernel/log.js';
import type { Telemetry } from '../kernel/telemetry.js';

export interface ObservabilityDeps {
  logger: Logger;
  telemetry: Telemetry;
  /** Present only in Lambda (lib/wiring/aws-observability.ts); locally there is nothing to trace into. */
  tracer?: Tracer | undefined;
}

// Whatever the event and result, like Powertools' own middlewares: they read only the Lambda context.
type AnyMiddleware = MiddlewareObj<unknown, unknown, Error, Context>;

/** Publishes what the invocation counted, after it succeeds or fails. */
export function publishTelemetry(telemetry: Telemetry): AnyMiddleware {
  const flush = () => telemetry.flush();
  return { after: flush, onError: flush };
}

/**
 * Powertools' captureLambdaHandler, loaded with the first traced invocation rather than with the
 * handler module: the Tracer pulls in the X-Ray SDK, whose context tracking hooks every promise of
 * the process (an await costs ~17× more once it is loaded), so a function that traces nothing must
 * never load it (lib/wiring/aws-observability.ts).
 */
function captureHandler(tracer: Tracer): AnyMiddleware {
  let loaded: Promise<AnyMiddleware> | undefined;
  const middleware = () =>
    (loaded ??= import('@aws-lambda-powertools/tracer/middleware').then(({ captureLambdaHandler }) =>
      captureLambdaHandler(tracer, { captureResponse: false }),
    ));
  return {
    before: async (request) => (await middleware()).before?.(request),
    after: async (request) => (await middleware()).after?.(request),
    onError: async (request) => (await middleware()).onError?.(request),
  };
}

/**
 * The Powertools middlewares for one endpoint, to be used first in the Middy chain so that they wrap
 * everything else: the Lambda context (request id, function name, cold start) on every log line,
 * an X-Ray subsegment for the handler, and the invocation's metrics published at its end.
 *
 * The handler's response is not recorded in the trace: it can hold a generated private key or a
 * decrypted receipt, and X-Ray metadata is readable by anyone who can read traces.
 */
export function observability(deps: ObservabilityDeps): AnyMiddleware[] {
  return [
    injectLambdaContext(deps.logger, { resetKeys: true }),
    ...(deps.tracer ? [captureHandler(deps.tracer)] : []),
    publishTelemetry(deps.telemetry),
  ];
}
