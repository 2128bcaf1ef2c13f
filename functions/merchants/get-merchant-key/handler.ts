import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { getMerchantKey } from '../../../lib/merchants/signing-keys.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { getMerchantKeyRoute as route } from './route.js';

/** GET /api/v1/merchant-keys/{kid} — public keys, for whoever checks a signed receipt. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await getMerchantKey(deps, request.params.kid) }));

export const handler = awsHandler(route, createHandler);
