import type { RouteDefinition } from '../contract/route.js';
import type { EscrowKey } from '../crypto/escrow.js';
import type { CoreDeps } from '../deps.js';
import type { GatewayRegistry } from '../gateways/port.js';
import { lambdaHandler, type LambdaEntry } from '../http/lambda.js';
import type { HttpHandler } from '../http/pipeline.js';
import { awsCoreDeps } from './aws-core.js';

/** What a deployed function is given, from what its route declares it uses. */
export type DepsFor<R extends Pick<RouteDefinition, 'escrow' | 'gateways'>> = CoreDeps &
  (R['escrow'] extends string ? { escrow: EscrowKey } : unknown) &
  (R['gateways'] extends true ? { gateways: GatewayRegistry } : unknown);

/**
 * A function's Lambda entry point, wired from its route's declared needs: the escrow key and the
 * gateways are built only for routes that declare them, and their adapters are imported on demand,
 * so a function that touches neither never evaluates the KMS or Secrets Manager code.
 */
export function awsHandler<R extends RouteDefinition>(
  route: R,
  createHandler: (deps: DepsFor<R>) => HttpHandler,
): LambdaEntry {
  return lambdaHandler(async () => {
    const core = awsCoreDeps();
    const escrow = route.escrow
      ? { escrow: (await import('./aws-escrow.js')).awsEscrowKey(core.config, core.tracer) }
      : {};
    const gateways = route.gateways
      ? { gateways: (await import('./aws-gateways.js')).awsGateways(core.config, core.logger) }
      : {};
    // The conditional spreads above are exactly what DepsFor<R> describes for this route.
    return createHandler({ ...core, ...escrow, ...gateways } as DepsFor<R>);
  });
}
