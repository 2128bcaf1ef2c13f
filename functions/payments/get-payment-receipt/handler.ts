import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { getPaymentReceipt } from '../../../lib/payments/payment-receipt.js';
import { getPaymentReceiptRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

type PaymentReceiptDeps = Omit<AppDeps, 'escrow'>;

/** GET /api/v1/payments/{gateway}/{paymentId}/receipt — the envelope a gateway payment points to. */
export const fetchPaymentReceipt = (deps: PaymentReceiptDeps, request: AuthenticatedRequest<typeof route>) =>
  getPaymentReceipt(deps, request.params.gateway, request.params.paymentId, request.caller);

export const createHandler = (deps: PaymentReceiptDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await fetchPaymentReceipt(deps, request) }));

export const handler = awsHandler(route, createHandler);
