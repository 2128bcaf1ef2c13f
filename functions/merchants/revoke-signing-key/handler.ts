import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { revokeSigningKey } from '../../../lib/merchants/signing-keys.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { revokeSigningKeyRoute as route } from './route.js';

/** DELETE /api/v1/merchants/signing-keys/{kid} — only the client that registered it. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    data: await revokeSigningKey(deps, {
      kid: request.params.kid,
      keyChangeProof: request.headers['Key-Change-Proof'],
      caller: request.caller,
      requestId: request.meta.requestId,
    }),
  }));

export const handler = awsHandler(route, createHandler);
