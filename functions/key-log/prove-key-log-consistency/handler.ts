import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { consistencyProof } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { proveKeyLogConsistencyRoute as route } from './route.js';

/** GET /api/v1/key-log/proof/consistency — public: the proof that the log only grew between two sizes. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await consistencyProof(deps, request.query) }));

export const handler = awsHandler(route, createHandler);
