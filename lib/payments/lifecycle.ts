import type { Caller } from '../api-keys/authenticator.js';
import type { AppDeps } from '../app/deps.js';
import {
  paymentPk,
  refundSk,
  StalePartition,
  type PaymentPartition,
  type PaymentRecord,
  type RefundRecord,
  type RefundRequestRecord,
  type TransactItem,
} from '../db/payments.js';
import type { ReceiptKey } from '../db/receipts.js';
import type {
  CreatedPayment,
  GatewayKind,
  GatewayRefund,
  PaymentState,
  RefundState,
} from '../gateways/port.js';
import { ConflictError, InvalidRequestError } from '../kernel/errors.js';
import { statusRank, type PaymentStatus } from '../kernel/payment-status.js';
import type { DigitalReceipt } from '../receipts/schemas.js';
import { amountRefund, type Refunded } from './refund-amounts.js';
import { basisOf, derivedUuid, openBasis, openReason, sealBasis } from './refund-basis.js';
import { cardTransactionOf } from './card-transaction.js';
import { sealRefundReceipt } from './refund-receipt.js';

/**
 * The life of a payment after its creation, applied once and in any order (docs/API.md, "Payment
 * status"): every change is derived from facts (the provider's state of the payment, each refund by
 * the provider's id with its amount and state) and written in one transaction with the payment's
 * version, so the sale's paymentStatus is always a function of everything recorded, never of the
 * order events came in. A state only ever moves forward (lib/kernel/payment-status.ts).
 */
export type LifecycleDeps = Pick<
  AppDeps,
  'clock' | 'config' | 'repos' | 'audit' | 'escrow' | 'logger' | 'telemetry' | 'cardTags'
>;

/** A refund request older than this that never heard from its gateway no longer holds events back. */
export const IN_FLIGHT_MS = 60_000;
const ATTEMPTS = 8;

const refundRank: Record<RefundState, number> = { pending: 0, succeeded: 1, failed: 1, canceled: 1 };

/** Refunds that move money back, or will: they count against what is left to refund. */
export const counts = (state: RefundState): boolean => state === 'pending' || state === 'succeeded';

const forward = <S extends string>(current: S, next: S, rank: Record<S, number>): S =>
  rank[next] > rank[current] ? next : current;

/** A payment with a refund was paid, whatever the events about the payment itself said so far. */
const paidState = (state: PaymentState, refunds: readonly RefundRecord[]): PaymentState =>
  refunds.some((refund) => counts(refund.state)) ? forward(state, 'succeeded', statusRank) : state;

/** The sale's status: its payment's, until succeeded refunds add up to part or all of it. */
export function saleStatus(
  state: PaymentState,
  amount: number,
  refunds: readonly RefundRecord[],
): PaymentStatus {
  const refunded = refunds
    .filter((refund) => refund.state === 'succeeded')
    .reduce((sum, refund) => sum + refund.amount, 0);
  if (refunded > 0 && refunded >= amount) return 'refunded';
  if (refunded > 0) return 'partially_refunded';
  return state;
}

/** What refunds recorded (and, for a new request, requests still in flight) have taken of the payment. */
export function refundedSoFar(partition: PaymentPartition, withRequestsInFlight: boolean): Refunded {
  const taken = [
    ...partition.refunds.filter((refund) => counts(refund.state)),
    ...(withRequestsInFlight ? partition.requests.filter((request) => !request.providerRefundId) : []),
  ];
  return {
    lines: taken.flatMap((entry) => entry.lines),
    tax: taken.reduce((sum, entry) => sum + entry.tax, 0),
    amount: taken.reduce((sum, entry) => sum + entry.amount, 0),
  };
}

export const saleKeyOf = (payment: PaymentRecord): ReceiptKey => ({
  merchantClientId: payment.merchantClientId,
  receiptId: payment.receiptId,
});

/**
 * Runs `attempt` on a freshly read partition until it commits: a concurrent change to the payment
 * (another event, a refund, a claim releasing the sale) makes its transaction fail, and it reads again.
 */
export async function retrying<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof StalePartition)) throw error;
      if (tries >= ATTEMPTS) {
        throw new ConflictError('The payment is changing under many requests at once; retry shortly', {
          retryable: true,
        });
      }
    }
  }
}

/**
 * Records a payment just made: its amount, state and the sealed basis its refund receipts are made
 * from, and the sale receipt's status when the payment is already settled (gateway_b completes at
 * creation). A repeat (a retried create) finds it there and changes nothing. `storedStatus` is the
 * sale's status as this request stored or found it: when the payment's state is that already, the
 * sale is not written again (nothing else moves a sale's status before its payment is recorded:
 * gateway events and refunds need the payment record), and the payment is one plain conditional
 * put instead of a transaction, which bills every item twice (issue 40).
 */
export async function recordCreatedPayment(
  deps: LifecycleDeps,
  input: {
    kind: GatewayKind;
    created: CreatedPayment;
    receipt: DigitalReceipt;
    caller: Caller;
    storedStatus?: PaymentStatus | undefined;
  },
): Promise<void> {
  const { kind, created, receipt, caller, storedStatus } = input;
  const at = deps.clock.now();
  const now = at.toISOString();
  const keyring = await deps.cardTags.keyring();
  const record: PaymentRecord = {
    pk: paymentPk(kind, created.paymentId),
    sk: 'PAYMENT',
    gateway: kind,
    paymentId: created.paymentId,
    merchantClientId: caller.clientId,
    receiptId: receipt.receiptId,
    transactionId: receipt.transaction.transactionId,
    merchantId: receipt.merchant.merchantId,
    amount: created.amount,
    currency: created.currency,
    state: created.state,
    basis: sealBasis(keyring, caller.clientId, receipt.receiptId, basisOf(receipt)),
    version: 0,
    createdAt: now,
    updatedAt: now,
    ttl: Math.floor(at.getTime() / 1000) + deps.config.receiptRetentionDays * 86_400,
  };
  const saleKey = { merchantClientId: caller.clientId, receiptId: receipt.receiptId };
  // Also after a decline at an earlier attempt, which marked the receipt failed.
  const saleChanges =
    storedStatus === created.state ? [] : [deps.repos.receipts.statusChange(saleKey, created.state)];
  await deps.repos.payments.putPayment(record, saleChanges);
}

export type Applied = 'applied' | 'unchanged' | 'unknown-payment';

/** The provider's word on the payment itself: moves its state (and the sale's status) forward only. */
export async function applyPaymentState(
  deps: LifecycleDeps,
  input: { gateway: GatewayKind; paymentId: string; state: PaymentState; requestId: string },
): Promise<Applied> {
  return retrying(async () => {
    const partition = await deps.repos.payments.partition(input.gateway, input.paymentId);
    if (!partition) return 'unknown-payment';
    const { payment, refunds } = partition;
    const state = forward(payment.state, input.state, statusRank);
    if (state === payment.state) return 'unchanged';
    const sale = await deps.repos.receipts.get(saleKeyOf(payment));
    const items = sale
      ? [
          deps.repos.receipts.saleChange(saleKeyOf(payment), {
            paymentStatus: saleStatus(state, payment.amount, refunds),
          }),
        ]
      : [];
    await deps.repos.payments.commit(payment, deps.clock.now(), items, { state });
    await deps.audit.record({
      action: 'payment.status',
      outcome: 'success',
      requestId: input.requestId,
      clientId: payment.merchantClientId,
      receiptId: payment.receiptId,
      transactionId: payment.transactionId,
      reason: `${payment.state} -> ${state}`,
    });
    return 'applied';
  });
}

export interface RecordRefundInput {
  gateway: GatewayKind;
  refund: GatewayRefund;
  /** The merchant's request, when the refund was asked of the service. */
  refundId?: string;
  source: 'api' | 'gateway';
  requestId: string;
}

/**
 * The one function that records a refund and makes its refund receipt, whoever started it: a
 * merchant through the service, or someone in the provider's dashboard (its event). A refund is
 * recorded once per provider refund id; a later word on it only moves its state forward. Null for a
 * payment the service did not make.
 */
export async function recordRefund(
  deps: LifecycleDeps,
  input: RecordRefundInput,
): Promise<{ refund: RefundRecord; changed: boolean } | null> {
  const { gateway, refund } = input;
  return retrying(async () => {
    const partition = await deps.repos.payments.partition(gateway, refund.paymentId);
    if (!partition) return null;
    const { payment } = partition;
    const now = deps.clock.now();
    if (input.source === 'gateway' && refund.currency.toUpperCase() !== payment.currency.toUpperCase()) {
      // A refund in another currency than its payment cannot be a refund of it: nothing is recorded.
      deps.telemetry.count('RefundCurrencyMismatches');
      await deps.audit.record({
        action: 'payment.refund',
        outcome: 'failure',
        requestId: input.requestId,
        clientId: payment.merchantClientId,
        reason: `${gateway} refund ${refund.providerRefundId} in ${refund.currency.toUpperCase()} refused: the payment is in ${payment.currency.toUpperCase()}`,
      });
      throw new InvalidRequestError(
        `The refund's currency (${refund.currency.toUpperCase()}) is not its payment's: nothing was recorded`,
        [{ field: 'currency', message: `must be ${payment.currency.toUpperCase()}, the payment's currency` }],
      );
    }
    const refundId = input.refundId ?? refund.refundId;
    // The merchant's request this refund answers: by its refundId (ours, or kept by the provider),
    // unless that request already became another provider refund.
    const request = refundId
      ? partition.requests.find(
          (candidate) =>
            candidate.refundId === refundId &&
            (!candidate.providerRefundId || candidate.providerRefundId === refund.providerRefundId),
        )
      : undefined;
    // The request learns which provider refund it became: it no longer holds anything back.
    const link: TransactItem[] =
      request && !request.providerRefundId
        ? [deps.repos.payments.replaceItem({ ...request, providerRefundId: refund.providerRefundId })]
        : [];
    const existing = partition.refunds.find(
      (candidate) => candidate.providerRefundId === refund.providerRefundId,
    );
    if (existing) return advanceRefund(deps, { partition, existing, refund, request, link, now });

    // An event about a refund this service is still asking the gateway for (gateway_b keeps no
    // refundId): held back, so the merchant's request, with its lines, is what gets recorded.
    if (!request && input.source === 'gateway') {
      const inFlight = partition.requests.some(
        (candidate) =>
          !candidate.providerRefundId && now.getTime() - Date.parse(candidate.createdAt) < IN_FLIGHT_MS,
      );
      if (inFlight) {
        throw new ConflictError(
          'A refund of this payment is being made through the service; deliver again shortly',
          {
            retryable: true,
          },
        );
      }
    }
    const keyring = await deps.cardTags.keyring();
    const basis = openBasis(keyring, payment.merchantClientId, payment.receiptId, payment.basis);
    const asRequested = request !== undefined && request.amount === refund.amount;
    const amounts: Pick<RefundRequestRecord, 'lines' | 'subtotal' | 'tax' | 'amount'> = asRequested
      ? request
      : amountRefund(basis, refundedSoFar(partition, false), refund.amount);
    // A signed request's receipt is the one its merchant signed, when the provider refunded what it asked.
    const signed = asRequested ? request.signed : undefined;
    const sale = await deps.repos.receipts.get(saleKeyOf(payment));
    const record: RefundRecord = {
      pk: payment.pk,
      sk: refundSk(refund.providerRefundId),
      providerRefundId: refund.providerRefundId,
      refundId:
        request?.refundId ?? refund.refundId ?? derivedUuid('refund', gateway, refund.providerRefundId),
      amount: refund.amount,
      currency: refund.currency,
      state: refund.state,
      receiptId: null,
      lines: amounts.lines,
      subtotal: amounts.subtotal,
      tax: amounts.tax,
      source: request ? 'api' : 'gateway',
      sequence: payment.version + 1,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      ttl: payment.ttl,
    };
    const sealed =
      sale && counts(refund.state)
        ? await sealRefundReceipt(deps, {
            receiptId:
              signed?.receiptId ??
              derivedUuid('refund-receipt', payment.merchantClientId, gateway, refund.providerRefundId),
            sale,
            basis,
            refundId: record.refundId,
            lines: record.lines,
            subtotal: record.subtotal,
            tax: record.tax,
            amount: record.amount,
            paymentStatus: refund.state,
            reason: request
              ? openReason(keyring, payment.merchantClientId, payment.receiptId, request)
              : undefined,
            createdAt: now,
            signed,
            cardTransaction: refund.references ? cardTransactionOf(gateway, refund.references) : undefined,
          })
        : null;
    if (sealed) record.receiptId = sealed.stored.receiptId;
    const refunds = [...partition.refunds, record];
    const state = paidState(payment.state, refunds);
    const items: TransactItem[] = [deps.repos.payments.putItem(record), ...link];
    if (sealed) items.push(deps.repos.receipts.putNew(sealed.stored));
    if (sale) {
      items.push(
        deps.repos.receipts.saleChange(saleKeyOf(payment), {
          paymentStatus: saleStatus(state, payment.amount, refunds),
          ...(sealed ? { refundReceiptId: sealed.stored.receiptId, recipient: sealed.recipient } : {}),
        }),
      );
    }
    await deps.repos.payments.commit(payment, now, items, state !== payment.state ? { state } : {});
    deps.telemetry.count('RefundsRecorded', { gateway, source: record.source });
    await deps.audit.record({
      action: 'payment.refund',
      outcome: 'success',
      requestId: input.requestId,
      clientId: payment.merchantClientId,
      receiptId: record.receiptId ?? payment.receiptId,
      transactionId: payment.transactionId,
      reason: `${record.source} refund ${record.refundId}: ${record.state}`,
    });
    return { refund: record, changed: true };
  });
}

/** A refund already recorded: its state moves forward, its receipt and the sale follow. */
async function advanceRefund(
  deps: LifecycleDeps,
  input: {
    partition: PaymentPartition;
    existing: RefundRecord;
    refund: GatewayRefund;
    request: RefundRequestRecord | undefined;
    link: TransactItem[];
    now: Date;
  },
): Promise<{ refund: RefundRecord; changed: boolean }> {
  const { partition, existing, request, link, now } = input;
  const { payment } = partition;
  const state = forward(existing.state, input.refund.state, refundRank);
  // Recorded from its event before the merchant's request heard back: it takes the merchant's refundId.
  const adopt = request !== undefined && existing.refundId !== request.refundId;
  if (state === existing.state && link.length === 0 && !adopt) return { refund: existing, changed: false };
  const updated: RefundRecord = {
    ...existing,
    state,
    updatedAt: now.toISOString(),
    ...(adopt ? { refundId: request.refundId, source: 'api' as const } : {}),
  };
  const refunds = partition.refunds.map((candidate) => (candidate === existing ? updated : candidate));
  const paid = paidState(payment.state, refunds);
  const items: TransactItem[] = [deps.repos.payments.replaceItem(updated), ...link];
  if (updated.receiptId && state !== existing.state) {
    const refundReceipt = { merchantClientId: payment.merchantClientId, receiptId: updated.receiptId };
    if (await deps.repos.receipts.get(refundReceipt))
      items.push(deps.repos.receipts.statusChange(refundReceipt, state));
  }
  if (await deps.repos.receipts.get(saleKeyOf(payment))) {
    items.push(
      deps.repos.receipts.saleChange(saleKeyOf(payment), {
        paymentStatus: saleStatus(paid, payment.amount, refunds),
        ...(updated.receiptId ? { cause: updated.receiptId } : {}),
      }),
    );
  }
  await deps.repos.payments.commit(payment, now, items, paid !== payment.state ? { state: paid } : {});
  return { refund: updated, changed: true };
}
