import { createHash } from 'node:crypto';
import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import type { Caller } from '../api-keys/authenticator.js';
import type { AppDeps } from '../app/deps.js';
import {
  requestSk,
  type PaymentPartition,
  type RefundRecord,
  type RefundRequestRecord,
  type SignedRefund,
} from '../db/payments.js';
import type { GatewayKind, RefundState } from '../gateways/port.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../kernel/errors.js';
import { ReceiptSignatureRefusedError } from '../merchants/vocabulary.js';
import { RefundExceedsPaymentError } from './vocabulary.js';
import { checkReceiptSignature, signingOf, type SignatureDeps } from '../merchants/receipt-signature.js';
import { refundReceiptOf, signedRefundReceiptId } from '@receipt-service/receipt-core';
import { dateTime, money, uuid, wellFormedText } from '../kernel/fields.js';
import type { SameType } from '../kernel/route.js';
import { configuredGateway } from './create.js';
import { recordRefund, refundedSoFar, retrying, type LifecycleDeps } from './lifecycle.js';
import { amountRefund, itemisedRefund, type RefundAmounts } from './refund-amounts.js';
import { openBasis, sealReason } from './refund-basis.js';

/**
 * The refund receipt of a signed refund, as the till computed it (the SDK's refundReceiptOf, over the
 * same amounts), with the merchant's signature over it checked; what the request record keeps so the
 * receipt recorded later is this one.
 */
async function signedRefundReceipt(
  deps: SignatureDeps,
  input: { jws: string; caller: Caller; requestId: string; receipt: Parameters<typeof refundReceiptOf>[0] },
): Promise<SignedRefund> {
  const receipt = refundReceiptOf(input.receipt);
  const merchantSignature = await checkReceiptSignature(deps, {
    caller: input.caller,
    jws: input.jws,
    receipt,
    requestId: input.requestId,
  });
  return { receiptId: receipt.receiptId, receiptDate: receipt.createdAt, merchantSignature };
}

/** POST /payments/{gateway}/{paymentId}/refunds: DECISIONS, Round 3, "Payment lifecycle". */
export const createRefundBody = lazySchema(() =>
  z
    .strictObject({
      refundId: uuid.meta({
        description:
          'Your id for this refund, and its idempotency key: the same refundId again returns the first refund.',
      }),
      amount: money.min(1, 'must be at least 1').optional().meta({
        description:
          'Minor units to give back. Without it, the amount is derived from `items`; with both, they must agree.',
      }),
      reason: wellFormedText(1, 192).optional().meta({
        description:
          'Why, in words the cardholder reads on the refund receipt (at most 192 characters of well-formed Unicode: a lone surrogate is a 400).',
      }),
      items: z
        .array(
          z.strictObject({
            lineItemId: uuid.meta({ description: 'A line of the sale receipt.' }),
            quantity: z.number().positive().max(1_000_000),
          }),
        )
        .min(1)
        .max(500)
        .optional()
        .meta({ description: "The sale's lines given back, and how many of each." }),
      refundDate: dateTime.optional().meta({
        description:
          "The refund receipt's time, required with Receipt-Signature: a signed refund receipt takes its times " +
          'from it (the merchant signs them), and its receiptId from the sale and the refundId (docs/ENVELOPE.md). ' +
          'Without a signature it is refused: the service times an unsigned refund receipt itself.',
      }),
    })
    .superRefine((body, ctx) => {
      if (body.amount === undefined && body.items === undefined) {
        ctx.addIssue({ code: 'custom', path: ['amount'], message: 'is required unless items are given' });
      }
    })
    .meta({
      id: 'CreateRefundRequest',
      description:
        'A full, partial or itemised refund. The amount of an itemised refund is derived from the sale lines and ' +
        'their share of tax (docs/API.md, "Refunds").',
    }),
);
export type CreateRefundBody = z.infer<typeof createRefundBody>;

export const refundStates = ['pending', 'succeeded', 'failed', 'canceled'] as const;

/** Spec-style resource: DECISIONS' refund shape, exactly. */
export interface RefundResult {
  refundId: string;
  paymentId: string;
  gateway: GatewayKind;
  amount: number;
  currency: string;
  status: RefundState;
  receiptId: string | null;
  createdAt: string;
}

export const refundResponse = lazySchema(() =>
  z
    .strictObject({
      refundId: uuid.meta({
        description:
          "Yours, or for a refund made in the provider's dashboard one the service derived from it.",
      }),
      paymentId: z.string(),
      gateway: z.enum(['gateway_a', 'gateway_b']),
      amount: money.meta({ description: 'Minor units given back.' }),
      currency: z.string(),
      status: z.enum(refundStates).meta({
        description:
          'pending until the provider settles it; succeeded refunds count towards the sale status.',
      }),
      receiptId: uuid.nullable().meta({
        description:
          "The refund receipt, sealed for the sale's recipient (fetch it with GET /receipts/{receiptId}); null " +
          'for a refund that moved no money or whose sale was erased.',
      }),
      createdAt: dateTime,
    })
    .meta({ id: 'Refund', description: 'A refund of a payment made through the service.' }),
);

export const refundListResponse = lazySchema(() =>
  z
    .strictObject({ refunds: z.array(refundResponse) })
    .meta({ id: 'RefundList', description: "The payment's refunds, oldest first, however they were made." }),
);

export const refundTypeMatches: SameType<z.output<typeof refundResponse>, RefundResult> = true;

const toResult = (gateway: GatewayKind, paymentId: string, refund: RefundRecord): RefundResult => ({
  refundId: refund.refundId,
  paymentId,
  gateway,
  amount: refund.amount,
  currency: refund.currency,
  status: refund.state,
  receiptId: refund.receiptId,
  createdAt: refund.createdAt,
});

const unknownPayment = () =>
  new NotFoundError('No payment with this paymentId on this gateway', { field: 'paymentId' });

/** The payment's partition, for the merchant client that made the payment only: anyone else is the same 404. */
async function ownPayment(
  deps: Pick<AppDeps, 'repos'>,
  gateway: GatewayKind,
  paymentId: string,
  caller: Caller,
): Promise<PaymentPartition> {
  const partition = await deps.repos.payments.partition(gateway, paymentId);
  if (!partition || partition.payment.merchantClientId !== caller.clientId) throw unknownPayment();
  return partition;
}

/** What is left to refund: nothing of a payment that was never paid. */
function refundable(partition: PaymentPartition): number {
  const paid = partition.payment.state === 'succeeded' || partition.refunds.length > 0;
  return paid ? partition.payment.amount - refundedSoFar(partition, true).amount : 0;
}

/** GET /payments/{gateway}/{paymentId}/refunds. */
export async function listRefunds(
  deps: Pick<AppDeps, 'repos'>,
  input: { gateway: GatewayKind; paymentId: string; caller: Caller },
): Promise<{ refunds: RefundResult[] }> {
  const partition = await ownPayment(deps, input.gateway, input.paymentId, input.caller);
  return {
    refunds: partition.refunds
      .toSorted((a, b) => a.sequence - b.sequence)
      .map((refund) => toResult(input.gateway, input.paymentId, refund)),
  };
}

/**
 * POST /payments/{gateway}/{paymentId}/refunds. Everything that can refuse is checked before the
 * gateway is called: the payment is the caller's, the lines are the sale's, the amount fits in what
 * is left (counting requests still in flight). The request is reserved in the payment's partition
 * first, so two concurrent refunds cannot both take the last of it; a gateway that refuses leaves
 * nothing behind. The refund is then recorded, with its receipt, by the same function that records
 * refunds made in the provider's dashboard.
 */
export async function createRefund(
  deps: LifecycleDeps & Pick<AppDeps, 'gateways'>,
  input: {
    gateway: GatewayKind;
    paymentId: string;
    body: CreateRefundBody;
    caller: Caller;
    requestId: string;
    /** The Receipt-Signature header, when the request carries one. */
    signature?: string | undefined;
  },
): Promise<RefundResult> {
  const { gateway, paymentId, body, caller } = input;
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        body.amount ?? null,
        body.reason ?? null,
        body.items ?? null,
        ...(body.refundDate ? [body.refundDate] : []),
      ]),
    )
    .digest('hex');
  const signing = await signingOf(deps, caller, input.signature, input.requestId);
  if (signing && !body.refundDate) {
    throw new ReceiptSignatureRefusedError(
      "A signed refund gives refundDate: it is the refund receipt's time, part of what the merchant signs",
      'no_refund_date',
    );
  }
  if (!signing && body.refundDate) {
    throw new InvalidRequestError('refundDate comes with Receipt-Signature', [
      { field: 'refundDate', message: 'is the signed refund receipt’s time: send it with Receipt-Signature' },
    ]);
  }
  type Reserved = { done: RefundRecord } | { request: RefundRequestRecord; currency: string };
  const reserved = await retrying<Reserved>(async () => {
    const partition = await ownPayment(deps, gateway, paymentId, caller);
    const { payment } = partition;
    const earlier = partition.requests.find((request) => request.refundId === body.refundId);
    if (earlier) {
      if (earlier.requestDigest !== digest) {
        throw new ConflictError('This refundId was already used with a different refund', {
          field: 'refundId',
        });
      }
      const done = partition.refunds.find((refund) => refund.providerRefundId === earlier.providerRefundId);
      // A repeat returns the first refund; one whose first attempt never heard back asks the gateway
      // again with the same idempotency key, which finds the same refund.
      return done ? { done } : { request: earlier, currency: payment.currency };
    }
    // An earlier attempt whose answer was lost (a 502) but which the gateway made: its event recorded
    // it under this refundId (gateway_a keeps it in the refund's metadata). It is the first refund.
    const recorded = partition.refunds.find((refund) => refund.refundId === body.refundId);
    if (recorded) return { done: recorded };
    const keyring = await deps.cardTags.keyring();
    const basis = openBasis(keyring, payment.merchantClientId, payment.receiptId, payment.basis);
    const refunded = refundedSoFar(partition, true);
    const amounts: RefundAmounts = body.items
      ? itemisedRefund(basis, refunded, body.items)
      : amountRefund(basis, refunded, body.amount!);
    if (body.items && body.amount !== undefined && body.amount !== amounts.amount) {
      throw new InvalidRequestError('amount does not match the items', [
        { field: 'amount', message: `must equal the amount of the items and their tax (${amounts.amount})` },
      ]);
    }
    const left = refundable(partition);
    if (amounts.amount > left) {
      throw new RefundExceedsPaymentError(amounts.amount, Math.max(0, left), payment.state);
    }
    // A signed refund: the receipt it will make is known now, and checked before anything is stored.
    const signed = signing
      ? await signedRefundReceipt(deps, {
          jws: signing.jws,
          caller,
          requestId: input.requestId,
          receipt: {
            receiptId: signedRefundReceiptId(payment.receiptId, body.refundId),
            saleReceiptId: payment.receiptId,
            basis,
            refundId: body.refundId,
            ...amounts,
            reason: body.reason,
            createdAt: body.refundDate!,
          },
        })
      : undefined;
    const request: RefundRequestRecord = {
      pk: payment.pk,
      sk: requestSk(body.refundId),
      refundId: body.refundId,
      requestDigest: digest,
      ...amounts,
      ...(body.reason
        ? {
            sealedReason: sealReason(
              keyring,
              payment.merchantClientId,
              payment.receiptId,
              body.refundId,
              body.reason,
            ),
          }
        : {}),
      ...(signed ? { signed } : {}),
      createdAt: deps.clock.now().toISOString(),
      ttl: payment.ttl,
    };
    await deps.repos.payments.commit(payment, deps.clock.now(), [deps.repos.payments.putItem(request)]);
    return { request, currency: payment.currency };
  });
  if ('done' in reserved) return toResult(gateway, paymentId, reserved.done);

  const provider = await configuredGateway(deps, gateway);
  const { request, currency } = reserved;
  let made;
  try {
    made = await provider.refund({
      paymentId,
      amount: request.amount,
      currency,
      idempotencyKey: `${caller.clientId}:${gateway}:${paymentId}:${request.refundId}`,
      refundId: request.refundId,
      ...(body.reason ? { reason: body.reason } : {}),
    });
  } catch (error) {
    // Refused or unreachable: the reservation goes, so nothing of this request stays behind.
    await retrying(async () => {
      const partition = await deps.repos.payments.partition(gateway, paymentId);
      const still = partition?.requests.find((candidate) => candidate.refundId === request.refundId);
      if (!partition || !still || still.providerRefundId) return;
      await deps.repos.payments.commit(partition.payment, deps.clock.now(), [
        deps.repos.payments.deleteItem(still),
      ]);
    });
    throw error;
  }
  const recorded = await recordRefund(deps, {
    gateway,
    refund: made,
    refundId: request.refundId,
    source: 'api',
    requestId: input.requestId,
  });
  if (!recorded) throw unknownPayment();
  return toResult(gateway, paymentId, recorded.refund);
}
