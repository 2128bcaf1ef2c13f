import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { merchantJwks } from '../../../lib/merchants/signing-keys.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { getMerchantJwksRoute as route } from './route.js';

/** GET /api/v1/merchants/{merchantClientId}/jwks.json — public: the merchant's active keys, as a JWK Set. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    document: await merchantJwks(deps, request.params.merchantClientId),
  }));

export const handler = awsHandler(route, createHandler);
