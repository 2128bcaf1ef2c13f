import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { setSigningPolicy } from '../../../lib/merchants/signing-keys.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { setSigningPolicyRoute as route } from './route.js';

/** POST /api/v1/merchants/signing-policy — the caller's own policy. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    data: await setSigningPolicy(deps, {
      clientId: request.caller.clientId,
      requireSignatures: request.body.requireSignatures,
      requestId: request.meta.requestId,
      authority: { keyChangeProof: request.headers['Key-Change-Proof'] },
    }),
  }));

export const handler = awsHandler(route, createHandler);
