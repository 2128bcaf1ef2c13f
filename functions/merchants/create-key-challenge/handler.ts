import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { issueKeyChallenge } from '../../../lib/merchants/key-proofs.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { createKeyChallengeRoute as route } from './route.js';

/** POST /api/v1/merchants/signing-keys/challenges — a nonce for the caller's next key proof. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    data: {
      ...(await issueKeyChallenge(deps, request.caller.clientId)),
      clientId: request.caller.clientId,
    },
  }));

export const handler = awsHandler(route, createHandler);
