import { ServiceUnavailableError } from '../../lib/errors.js';
import { cachedHealthCheck, type HealthDeps, type HealthReport } from '../../lib/health.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type PlatformDeps } from '../../lib/http/pipeline.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { awsEscrowKey } from '../../lib/wiring/aws-escrow.js';
import { awsGateways } from '../../lib/wiring/aws-gateways.js';

/** GET /api/v1/health — no API key; 503 when any dependency is down. */
export const health = async (check: () => Promise<HealthReport>) => {
  const report = await check();
  if (report.status !== 'ok')
    throw new ServiceUnavailableError('A dependency of the service is unavailable', { ...report });
  return report;
};

export const createHandler = (deps: PlatformDeps & HealthDeps) => {
  const check = cachedHealthCheck(deps);
  return httpEndpoint({ route: findRoute('health'), deps }, async () => ({ data: await health(check) }));
};

export const handler = lambdaHandler(() => {
  const core = awsCoreDeps();
  return createHandler({
    ...core,
    escrow: awsEscrowKey(core.config),
    gateways: awsGateways(core.config, core.logger),
  });
});
