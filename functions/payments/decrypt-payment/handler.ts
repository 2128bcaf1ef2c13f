import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { decryptPaymentReceipt } from '../../../lib/payments/decrypt.js';
import { decryptPaymentRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

type DecryptPaymentDeps = Omit<AppDeps, 'escrow'>;

/** POST /api/v1/payments/decrypt — the receipt attached to a gateway payment, for the token holder. */
export const decryptPayment = (deps: DecryptPaymentDeps, request: AuthenticatedRequest<typeof route>) =>
  decryptPaymentReceipt(deps, {
    ...request.body,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
  });

export const createHandler = (deps: DecryptPaymentDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await decryptPayment(deps, request) }));

export const handler = awsHandler(route, createHandler);
