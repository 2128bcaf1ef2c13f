import { requireTable } from '../../lib/config.js';
import type { AppDeps } from '../../lib/deps.js';
import { InvalidRequestError } from '../../lib/errors.js';
import { lambdaHandler } from '../../lib/http/lambda.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../lib/http/pipeline.js';
import { createPaymentWithReceipt, type PaymentResult } from '../../lib/payments/create.js';
import { idempotent } from '../../lib/payments/idempotency.js';
import { findRoute } from '../../lib/routes.js';
import { awsCoreDeps } from '../../lib/wiring/aws-core.js';
import { awsEscrowKey } from '../../lib/wiring/aws-escrow.js';
import { awsGateways } from '../../lib/wiring/aws-gateways.js';
import {
  createPaymentBody,
  createPaymentPath,
  idempotencyKeyHeader,
  type CreatePaymentRequestBody,
} from './schema.js';

type CreatePaymentInput = Parameters<typeof createPaymentWithReceipt>[1];

function parseRequest(request: AuthenticatedRequest<CreatePaymentRequestBody>) {
  const path = createPaymentPath.safeParse(request.pathParameters);
  const header = request.headers['idempotency-key'];
  const key = header === undefined ? undefined : idempotencyKeyHeader.safeParse(header);
  const fields = [
    ...(path.success
      ? []
      : [{ field: 'gateway', message: 'must be one of gateway_a, gateway_b (or stripe, square)' }]),
    ...(key && !key.success
      ? [{ field: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' }]
      : []),
  ];
  if (!path.success || (key && !key.success)) throw new InvalidRequestError('Invalid request', fields);
  return { kind: path.data.gateway, idempotencyKey: key?.data };
}

/**
 * POST /api/v1/payments/{gateway}/create — encrypt the receipt, charge it on the gateway, map it.
 * The same receiptId (or Idempotency-Key) returns the first result and never charges again.
 */
export const createHandler = (deps: AppDeps) => {
  const once = idempotent<CreatePaymentInput, PaymentResult>(
    deps.dynamo,
    requireTable(deps.config, 'idempotency'),
    (input) => createPaymentWithReceipt(deps, input),
  );
  return httpEndpoint(
    { route: findRoute('create-payment'), deps, body: createPaymentBody },
    async (request) => {
      const { kind, idempotencyKey } = parseRequest(request);
      const input = { kind, body: request.body, caller: request.caller, requestId: request.meta.requestId };
      const key = `${request.caller.clientId}:${idempotencyKey ?? `receipt:${request.body.receiptId}`}`;
      return {
        data: await once.run({ key, body: { kind, ...request.body }, payload: input }, request.lambdaContext),
      };
    },
  );
};

export const handler = lambdaHandler(() => {
  const core = awsCoreDeps();
  return createHandler({
    ...core,
    escrow: awsEscrowKey(core.config),
    gateways: awsGateways(core.config, core.logger),
  });
});
