import { ServiceUnavailableError } from '../../../lib/kernel/errors.js';
import { cachedHealthCheck, type HealthDeps, type HealthReport } from '../../../lib/platform/health.js';
import { httpEndpoint, type PlatformDeps } from '../../../lib/http/pipeline.js';
import { healthRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/** GET /api/v1/health — no API key; 503 when any dependency is down. */
export const health = async (check: () => Promise<HealthReport>) => {
  const report = await check();
  if (report.status !== 'ok')
    throw new ServiceUnavailableError('A dependency of the service is unavailable', { ...report });
  return report;
};

export const createHandler = (deps: PlatformDeps & HealthDeps) => {
  const check = cachedHealthCheck(deps);
  return httpEndpoint(route, deps, async () => ({ data: await health(check) }));
};

export const handler = awsHandler(route, createHandler);
