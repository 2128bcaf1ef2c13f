import type { RouteDefinition } from '../kernel/route.js';
import type { EscrowKey } from '../crypto/escrow.js';
import type { CoreDeps } from '../app/deps.js';
import type { GatewayRegistry } from '../gateways/port.js';
import type { LogSigningKey } from '../key-log/tree-head.js';
import { lambdaHandler, type LambdaEntry } from '../http/lambda.js';
import type { HttpHandler } from '../http/pipeline.js';
import { awsCoreDeps } from './aws-core.js';

/** What a deployed function is given, from what its route declares it uses. */
export type DepsFor<R extends Pick<RouteDefinition, 'escrow' | 'gateways' | 'logKey'>> = CoreDeps &
  (R['escrow'] extends string ? { escrow: EscrowKey } : unknown) &
  (R['logKey'] extends true ? { logKey: LogSigningKey } : unknown) &
  (R['gateways'] extends true ? { gateways: GatewayRegistry } : unknown);

/**
 * Set at bundling time from the route (infra/service-function.ts, bench/coldstart.ts): esbuild then
 * sees `'no' !== 'no'` and drops the adapter a route does not declare, with everything it imports
 * (the KMS client, the gateway registry and the payment SDKs). Unbundled, both stay reachable.
 */
export const bundleDefines = (
  route: Pick<RouteDefinition, 'escrow' | 'gateways' | 'logKey'>,
): Record<string, string> => ({
  'process.env.RECEIPT_SERVICE_BUNDLE_ESCROW': JSON.stringify(route.escrow ? 'yes' : 'no'),
  'process.env.RECEIPT_SERVICE_BUNDLE_LOG_KEY': JSON.stringify(route.logKey ? 'yes' : 'no'),
  'process.env.RECEIPT_SERVICE_BUNDLE_GATEWAYS': JSON.stringify(route.gateways ? 'yes' : 'no'),
});

/**
 * A function's Lambda entry point, wired from its route's declared needs: the escrow key and the
 * gateways are built only for routes that declare them, and their adapters are imported on demand.
 */
export function awsHandler<R extends RouteDefinition>(
  route: R,
  createHandler: (deps: DepsFor<R>) => HttpHandler,
): LambdaEntry {
  return lambdaHandler(async () => {
    const core = await awsCoreDeps();
    // Each condition is written out in full so that esbuild can fold it (see bundleDefines).
    const escrow =
      process.env.RECEIPT_SERVICE_BUNDLE_ESCROW !== 'no' && route.escrow
        ? { escrow: (await import('./aws-escrow.js')).awsEscrowKey(core.config, core.tracer) }
        : {};
    const logKey =
      process.env.RECEIPT_SERVICE_BUNDLE_LOG_KEY !== 'no' && route.logKey
        ? { logKey: (await import('./aws-log-key.js')).awsLogKey(core.config, core.tracer) }
        : {};
    const gateways =
      process.env.RECEIPT_SERVICE_BUNDLE_GATEWAYS !== 'no' && route.gateways
        ? { gateways: (await import('./aws-gateways.js')).awsGateways(core.config, core.logger) }
        : {};
    // The conditional spreads above are exactly what DepsFor<R> describes for this route.
    return createHandler({ ...core, ...escrow, ...logKey, ...gateways } as DepsFor<R>);
  });
}
