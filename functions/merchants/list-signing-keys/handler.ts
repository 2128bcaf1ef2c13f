import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { listSigningKeys } from '../../../lib/merchants/signing-keys.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { listSigningKeysRoute as route } from './route.js';

/** GET /api/v1/merchants/signing-keys — the caller's own keys only. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await listSigningKeys(deps, request.caller) }));

export const handler = awsHandler(route, createHandler);
