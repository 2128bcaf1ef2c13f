import { httpEndpoint, type PlatformDeps } from '../../../lib/http/pipeline.js';
import { publishedDocument } from '../../../lib/http/published-document.js';
import { openApiRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

/**
 * GET /api/v1/openapi.json — no API key (anonymous calls count against the per-IP budget). The
 * document is the one `npm run openapi` generated from the routes, read once per container, not built
 * here: building it would load every route's schemas at each cold start.
 */
export const createHandler = (deps: PlatformDeps) =>
  httpEndpoint(route, deps, async () => ({
    text: publishedDocument().json,
    contentType: 'application/json',
  }));

export const handler = awsHandler(route, createHandler);
