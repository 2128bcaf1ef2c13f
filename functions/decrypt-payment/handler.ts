import type { AppDeps } from '../../lib/deps.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { decryptPaymentReceipt } from '../../lib/payments/decrypt.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { awsGateways } from '../../lib/wiring/aws-gateways.js';
import { decryptPaymentBody, type DecryptPaymentBody } from './schema.js';

type DecryptPaymentDeps = Omit<AppDeps, 'escrow'>;

/** POST /api/v1/payments/decrypt — the receipt attached to a gateway payment, for the token holder. */
export const decryptPayment = (deps: DecryptPaymentDeps, request: AuthenticatedRequest<DecryptPaymentBody>) =>
  decryptPaymentReceipt(deps, {
    ...request.body,
    caller: request.caller,
    requestId: request.meta.requestId,
    sourceIp: request.meta.sourceIp,
  });

export const createHandler = (deps: DecryptPaymentDeps) =>
  httpEndpoint({ route: findRoute('decrypt-payment'), deps, body: decryptPaymentBody }, async (request) => ({
    data: await decryptPayment(deps, request),
  }));

export const handler = lambdaHandler(() => {
  const core = awsCoreDeps();
  return createHandler({ ...core, gateways: awsGateways(core.config, core.logger) });
});
