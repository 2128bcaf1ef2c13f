import type { AppDeps } from '../../../lib/app/deps.js';
import { httpEndpoint, type AuthenticatedRequest } from '../../../lib/http/pipeline.js';
import { digestOf, encryptAndStore } from '../../../lib/receipts/encrypt.js';
import { receiptOfFlattened } from '../../../lib/receipts/flattened.js';
import { sealedWithSignature, signingOf } from '../../../lib/merchants/receipt-signature.js';
import { sealedWithCredential } from '../../../lib/merchants/receipt-credential.js';
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
  const { body, caller } = request;
  const requestId = request.meta.requestId;
  // A signature is checked over exactly what is sealed, before anything is stored.
  const signing = await signingOf(deps, caller, request.headers['Receipt-Signature'], requestId);
  const signed = await sealedWithSignature(deps, signing, {
    caller,
    receipt:
      body.form === 'nested' ? body.receipt : receiptOfFlattened(body, signing !== null, deps.clock.now()),
    requestId,
  });
  // The credential too, over the same receipt, before anything is stored.
  const receipt = await sealedWithCredential(deps, body.receiptCredential, {
    caller,
    receipt: signed,
    requestId,
  });
  const { envelope } = await encryptAndStore(deps, {
    receipt,
    ...(body.recipientHashedPan ? { recipientHashedPan: body.recipientHashedPan } : {}),
    caller,
    requestId,
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
