import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { inclusionByKid } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { proveKeyLogInclusionRoute as route } from './route.js';

/** GET /api/v1/key-log/proof/inclusion — public: a kid's leaves with their audit paths. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await inclusionByKid(deps, request.query) }));

export const handler = awsHandler(route, createHandler);
