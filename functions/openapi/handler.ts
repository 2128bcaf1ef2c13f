import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type PlatformDeps } from '../../lib/http/pipeline.js';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';

/**
 * GET /api/v1/openapi.json — no API key (anonymous calls count against the per-IP budget). The
 * document depends only on the code, so it is built once per cold start, not per request.
 */
export const createHandler = (deps: PlatformDeps) => {
  const document = buildOpenApiDocument();
  return httpEndpoint({ route: findRoute('openapi'), deps }, async () => ({ document }));
};

export const handler = lambdaHandler(() => createHandler(awsCoreDeps()));
