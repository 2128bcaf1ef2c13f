import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { proveKeyLog } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { proveKeyLogRoute as route } from './route.js';

/** GET /api/v1/key-log/proof/inclusion and /consistency — public: proofs against the log's tree heads. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    data: await proveKeyLog(deps, { kind: request.params.kind, ...request.query }),
  }));

export const handler = awsHandler(route, createHandler);
