import type * as z from 'zod';
import type { Caller } from '../api-keys/authenticator.js';
import type { StoredReceipt } from '../db/receipts.js';
import type { TransactionMappingRecord } from '../db/transactions.js';
import type { AppDeps } from '../app/deps.js';
import { NotFoundError } from '../kernel/errors.js';
import type { GatewayKind } from '../gateways/port.js';
import { decryptForCaller } from '../receipts/decrypt.js';
import type { DigitalReceipt } from '../receipts/schemas.js';
import { configuredGateway } from './create.js';
import type { decryptPaymentBody } from './schemas.js';

/**
 * The stored receipt a gateway payment points to, with its mapping: the payment's receipt pointers
 * must agree with the mapping stored for them. A payment the gateway does not know, or one that
 * carries no receipt of ours, is a 404. Whether the caller may see the receipt is the caller's check.
 */
export async function receiptOfPayment(
  deps: Pick<AppDeps, 'repos' | 'gateways'>,
  gatewayKind: GatewayKind,
  paymentId: string,
): Promise<{ receipt: StoredReceipt; mapping: TransactionMappingRecord }> {
  const gateway = await configuredGateway(deps, gatewayKind);
  const payment = await gateway.retrievePayment(paymentId);
  if (!payment)
    throw new NotFoundError('No payment with this paymentId on this gateway', { field: 'paymentId' });
  const noReceipt = () => new NotFoundError('No receipt is attached to this payment', { field: 'paymentId' });
  const pointers = payment.pointers;
  if (!pointers) throw noReceipt();
  // Receipt and transaction ids are unique within a merchant client; the merchantId names that client.
  const merchantClientId = await deps.repos.merchants.ownerOf(pointers.merchantId);
  if (!merchantClientId) throw noReceipt();
  const mapping = await deps.repos.transactions.get({
    merchantClientId,
    transactionId: pointers.transactionId,
  });
  if (
    !mapping ||
    mapping.receiptId !== pointers.receiptId ||
    mapping.paymentGateway !== gatewayKind ||
    (mapping.paymentId !== undefined && mapping.paymentId !== payment.paymentId)
  ) {
    throw noReceipt();
  }
  const receipt = await deps.repos.receipts.get({ merchantClientId, receiptId: pointers.receiptId });
  if (!receipt || receipt.envelope.merchantId !== pointers.merchantId) throw noReceipt();
  return { receipt, mapping };
}

/**
 * Follows a payment's receipt pointers to the stored envelope (receiptOfPayment), then decrypts
 * exactly as receipts/decrypt does: everything about the token, key and envelope is the uniform 403.
 */
export async function decryptPaymentReceipt(
  deps: Pick<AppDeps, 'clock' | 'repos' | 'audit' | 'gateways' | 'telemetry'>,
  input: z.infer<typeof decryptPaymentBody> & {
    caller: Caller;
    requestId: string;
    sourceIp: string;
  },
): Promise<DigitalReceipt> {
  const { receipt } = await receiptOfPayment(deps, input.gateway, input.paymentId);
  return decryptForCaller(deps, {
    envelope: receipt.envelope,
    accessTokenId: input.accessTokenId,
    privateKey: input.privateKey,
    caller: input.caller,
    requestId: input.requestId,
    sourceIp: input.sourceIp,
    action: 'payment.decrypt',
  });
}
