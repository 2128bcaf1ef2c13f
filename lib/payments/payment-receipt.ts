import type { Caller } from '../api-keys/authenticator.js';
import type { AppDeps } from '../app/deps.js';
import { NotFoundError } from '../kernel/errors.js';
import type { GatewayKind } from '../gateways/port.js';
import { receiptOfPayment } from './decrypt.js';
import { clearFieldsOf, mayRead, type FetchedReceipt, type ReadDeps } from '../receipts/inbox.js';
import { publicMapping } from '../transactions/transactions.js';

// Apart from lib/receipts/inbox.ts: only this route reaches the gateways, and only its bundle carries them.

/**
 * GET /payments/{gateway}/{paymentId}/receipt: the receipt a payment points to (found as
 * payments/decrypt finds it), for the same callers as GET /receipts/{receiptId}. An unknown payment,
 * a payment without our receipt and a receipt the caller may not read are one and the same 404.
 */
export async function getPaymentReceipt(
  deps: ReadDeps & Pick<AppDeps, 'gateways'>,
  gateway: GatewayKind,
  paymentId: string,
  caller: Caller,
): Promise<FetchedReceipt> {
  const unknownPayment = () =>
    new NotFoundError('No receipt for this paymentId on this gateway', { field: 'paymentId' });
  let found: Awaited<ReturnType<typeof receiptOfPayment>>;
  try {
    found = await receiptOfPayment(deps, gateway, paymentId);
  } catch (error) {
    if (error instanceof NotFoundError) throw unknownPayment();
    throw error;
  }
  if (!(await mayRead(deps, found.receipt, caller))) throw unknownPayment();
  return {
    envelope: found.receipt.envelope,
    mapping: publicMapping(found.mapping, found.receipt),
    ...clearFieldsOf(found.receipt),
  };
}
