import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { digestOf, encryptAndStore } from '../../../lib/receipts/encrypt.js';
import { toDigitalReceipt } from '../../../lib/receipts/flattened.js';
import { encryptReceiptRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';

type EncryptReceiptDeps = Omit<AppDeps, 'gateways'>;

/**
 * POST /api/v1/receipts/encrypt — either form becomes a DigitalReceipt, encrypted for the registered
 * recipient or escrowed. A nested-form recipientIdentifier never selects a user and is not stored at all.
 */
export const encryptReceipt = async (
  deps: EncryptReceiptDeps,
  request: AuthenticatedRequest<typeof route>,
) => {
  const { body } = request;
  const receipt = body.form === 'nested' ? body.receipt : toDigitalReceipt(body, deps.clock.now());
  const { envelope } = await encryptAndStore(deps, {
    receipt,
    ...(body.recipientHashedPan ? { recipientHashedPan: body.recipientHashedPan } : {}),
    caller: request.caller,
    requestId: request.meta.requestId,
    // The identifier is not stored in any form, not even inside a digest; the card goes in keyed.
    requestDigest: digestOf({ ...body, recipientIdentifier: undefined, recipientHashedPan: undefined }),
  });
  if (body.form === 'nested') return envelope;
  // The spec's flattened-form response has no expiresAt and no escrowKeyId.
  const { expiresAt: _expiresAt, escrowKeyId: _escrowKeyId, ...flattened } = envelope;
  return flattened;
};

export const createHandler = (deps: EncryptReceiptDeps) =>
  httpEndpoint(route, deps, async (request) => ({ data: await encryptReceipt(deps, request) }));

export const handler = awsHandler(route, createHandler);
