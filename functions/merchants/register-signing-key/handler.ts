import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { registerSigningKey } from '../../../lib/merchants/signing-keys.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { registerSigningKeyRoute as route } from './route.js';

/** POST /api/v1/merchants/signing-keys — the key is checked member by member, then named by its thumbprint. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    data: await registerSigningKey(deps, {
      publicKey: request.body.publicKey,
      proof: request.body.proof,
      keyChangeProof: request.headers['Key-Change-Proof'],
      caller: request.caller,
      requestId: request.meta.requestId,
    }),
  }));

export const handler = awsHandler(route, createHandler);
