import { httpEndpoint, type PlatformDeps } from '../../../lib/http/pipeline.js';
import { buildOpenApiDocument } from '../../../lib/openapi/document.js';
import { routes } from '../../routes.js';
import { openApiRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/**
 * GET /api/v1/openapi.json — no API key (anonymous calls count against the per-IP budget). The
 * document depends only on the code, so it is built once per cold start, not per request.
 */
export const createHandler = (deps: PlatformDeps) => {
  const document = buildOpenApiDocument(routes);
  return httpEndpoint(route, deps, async () => ({ document }));
};

export const handler = awsHandler(route, createHandler);
