// Type-only: the SDK itself is loaded by the registry on first use, so cold starts that never pay skip it.
import type Stripe from 'stripe';
import * as z from 'zod';
import { AppError, ConflictError, InvalidRequestError } from '../kernel/errors.js';
import { GatewayError, InvalidSignatureError, PaymentDeclinedError } from './vocabulary.js';
import {
  assertMinorUnits,
  cardReferencesOf,
  normaliseCurrency,
  pointerMetadata,
  pointersFromMetadata,
  providerIdempotencyKey,
} from './common.js';
import {
  EVENT_TOLERANCE_SECONDS,
  isFutureDated,
  type CardReferences,
  type CreatedPayment,
  type CreatePaymentRequest,
  type GatewayEvent,
  type GatewayFact,
  type GatewayPayment,
  type GatewayRefund,
  type PaymentGateway,
  type PaymentState,
  type RefundRequest,
  type RefundState,
  type SignedEvent,
} from './port.js';

export const stripeMetadataLimits = { maxKeys: 50, maxKeyLength: 40, maxValueLength: 500 } as const;

/**
 * Stripe rejects metadata beyond these limits only after the request is sent; checking first gives the
 * caller a 400 that names the field instead of a provider error, and spends no request.
 */
export function validateStripeMetadata(metadata: Record<string, string>): void {
  const problems: string[] = [];
  const keys = Object.keys(metadata);
  if (keys.length > stripeMetadataLimits.maxKeys) {
    problems.push(`at most ${stripeMetadataLimits.maxKeys} keys are allowed, got ${keys.length}`);
  }
  for (const key of keys) {
    if (key.length === 0 || key.length > stripeMetadataLimits.maxKeyLength) {
      problems.push(`key "${key.slice(0, 50)}" must be 1-${stripeMetadataLimits.maxKeyLength} characters`);
    }
    if (/[[\]]/.test(key)) problems.push(`key "${key.slice(0, 50)}" must not contain "[" or "]"`);
    const value = metadata[key] ?? '';
    // An empty value is how Stripe deletes a key, so it would silently drop the pointer.
    if (value.length === 0 || value.length > stripeMetadataLimits.maxValueLength) {
      problems.push(
        `value of "${key.slice(0, 50)}" must be 1-${stripeMetadataLimits.maxValueLength} characters`,
      );
    }
  }
  if (problems.length > 0) {
    throw new InvalidRequestError(
      'Payment metadata exceeds the gateway_a limits',
      problems.map((message) => ({ field: 'metadata', message })),
    );
  }
}

/** Stripe's intent ids; anything else cannot exist there, and is not sent to the API as a path. */
const paymentIntentId = /^pi_[A-Za-z0-9]{1,255}$/;

/** An intent's state: only `succeeded` and `canceled` are final; a failed attempt leaves it open. */
const intentState = (status: string): PaymentState =>
  status === 'succeeded' ? 'succeeded' : status === 'canceled' ? 'canceled' : 'pending';

const refundStates: Record<string, RefundState> = {
  pending: 'pending',
  requires_action: 'pending',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'canceled',
};

/** The parts of Stripe's objects the service reads; anything else in them is ignored. */
const refundObject = z.object({
  id: z.string(),
  amount: z.number().int(),
  currency: z.string(),
  status: z.string().nullable().optional(),
  payment_intent: z
    .union([z.string(), z.object({ id: z.string() })])
    .nullable()
    .optional(),
  metadata: z.record(z.string(), z.string()).nullable().optional(),
  created: z.number().int(),
  charge: z
    .union([z.string(), z.object({ id: z.string() })])
    .nullable()
    .optional(),
  destination_details: z
    .object({
      card: z
        .object({
          reference: z.string().nullable().optional(),
          reference_type: z.string().nullable().optional(),
        })
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
});
/** A charge's card references (expanded `latest_charge` of a confirmed intent). */
const cardChargeObject = z.object({
  id: z.string(),
  calculated_statement_descriptor: z.string().nullable().optional(),
  payment_method_details: z
    .object({
      card: z
        .object({
          network: z.string().nullable().optional(),
          brand: z.string().nullable().optional(),
          authorization_code: z.string().nullable().optional(),
          network_transaction_id: z.string().nullable().optional(),
          last4: z.string().nullable().optional(),
        })
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
});
const intentObject = z.object({ id: z.string(), status: z.string() });
const chargeObject = z.object({
  payment_intent: z
    .union([z.string(), z.object({ id: z.string() })])
    .nullable()
    .optional(),
  refunds: z
    .object({ data: z.array(refundObject), has_more: z.boolean().optional() })
    .nullable()
    .optional(),
});
const eventEnvelope = z.object({
  id: z.string(),
  type: z.string(),
  created: z.number().int(),
  data: z.object({ object: z.unknown() }),
});

const idOf = (value: string | { id: string } | null | undefined): string | null =>
  value === null || value === undefined ? null : typeof value === 'string' ? value : value.id;

/** A confirmed intent's charge, as Stripe documents it on `payment_method_details.card`. */
function chargeReferences(intentId: string, latestCharge: unknown): CardReferences | null {
  const charge = cardChargeObject.safeParse(latestCharge);
  if (!charge.success) return null;
  const card = charge.data.payment_method_details?.card;
  return cardReferencesOf({
    network: card?.network ?? card?.brand,
    authorizationCode: card?.authorization_code,
    networkTransactionId: card?.network_transaction_id,
    last4: card?.last4,
    statementDescriptor: charge.data.calculated_statement_descriptor,
    providerIds: { paymentIntentId: intentId, chargeId: charge.data.id },
  });
}

function toRefund(refund: z.infer<typeof refundObject>): GatewayRefund | null {
  const paymentId = idOf(refund.payment_intent);
  if (!paymentId) return null;
  const card = refund.destination_details?.card;
  const arn = card?.reference_type === 'acquirer_reference_number' ? card.reference : undefined;
  return {
    references: cardReferencesOf({
      acquirerReferenceNumber: arn,
      providerIds: { paymentIntentId: paymentId, chargeId: idOf(refund.charge), refundId: refund.id },
    }),
    providerRefundId: refund.id,
    paymentId,
    amount: refund.amount,
    currency: refund.currency.toUpperCase(),
    state: refundStates[refund.status ?? 'pending'] ?? 'pending',
    refundId: refund.metadata?.refundId ?? null,
    createdAt: new Date(refund.created * 1000).toISOString(),
  };
}

/** What each event type the service follows says; every other type says nothing. */
function factsOf(type: string, object: unknown): GatewayFact[] {
  if (type.startsWith('payment_intent.')) {
    const intent = intentObject.safeParse(object);
    if (!intent.success) return [];
    const state: PaymentState =
      type === 'payment_intent.payment_failed' ? 'failed' : intentState(intent.data.status);
    return [{ kind: 'payment', paymentId: intent.data.id, state }];
  }
  if (type === 'charge.refunded' || type === 'charge.refund.updated') {
    if (type === 'charge.refund.updated') return factsOf('refund.updated', object);
    const charge = chargeObject.safeParse(object);
    const paymentId = charge.success ? idOf(charge.data.payment_intent) : null;
    if (!charge.success || !paymentId) return [];
    // API versions since 2022-11-15 leave the refunds out of a charge: the payment's are read instead.
    const listed = charge.data.refunds;
    if (!listed || listed.has_more) return [{ kind: 'refunds-changed', paymentId }];
    return listed.data.flatMap((refund) => {
      const read = toRefund(refund);
      return read ? [{ kind: 'refund' as const, refund: read }] : [];
    });
  }
  if (type === 'refund.created' || type === 'refund.updated' || type === 'refund.failed') {
    const refund = refundObject.safeParse(object);
    const read = refund.success ? toRefund(refund.data) : null;
    return read ? [{ kind: 'refund', refund: read }] : [];
  }
  return [];
}

export interface StripeGatewayOptions {
  /** The endpoint's signing secret (`whsec_…`), read when the first event is verified. */
  webhookSecret?: () => Promise<string>;
  /** The key's mode, for an answer that does not carry `livemode` itself. */
  liveKey?: boolean;
}

/** gateway_a: a PaymentIntent whose metadata holds the receipt pointers. */
export class StripeGateway implements PaymentGateway {
  readonly kind = 'gateway_a' as const;

  constructor(
    private readonly stripe: Stripe,
    private readonly options: StripeGatewayOptions = {},
  ) {}

  async createPayment(request: CreatePaymentRequest): Promise<CreatedPayment> {
    assertMinorUnits('amount', request.amount, { allowZero: false });
    const currency = normaliseCurrency(request.currency);
    const metadata = pointerMetadata(request.pointers);
    validateStripeMetadata(metadata);
    try {
      // With a payment method the intent is confirmed at once, and its charge read in the same answer.
      const confirm = request.paymentMethod
        ? { confirm: true, payment_method: request.paymentMethod, expand: ['latest_charge'] }
        : {};
      const intent = await this.stripe.paymentIntents.create(
        { amount: request.amount, currency: currency.toLowerCase(), metadata, ...confirm },
        { idempotencyKey: providerIdempotencyKey('pi', request.idempotencyKey) },
      );
      return {
        paymentId: intent.id,
        clientSecret: intent.client_secret,
        orderId: null,
        status: intent.status,
        state: intentState(intent.status),
        amount: intent.amount,
        currency: intent.currency.toUpperCase(),
        livemode: typeof intent.livemode === 'boolean' ? intent.livemode : (this.options.liveKey ?? false),
        references: intent.status === 'succeeded' ? chargeReferences(intent.id, intent.latest_charge) : null,
      };
    } catch (error) {
      throw this.toAppError(error, 'createPayment');
    }
  }

  async retrievePayment(paymentId: string): Promise<GatewayPayment | null> {
    if (!paymentIntentId.test(paymentId)) return null;
    try {
      const intent = await this.stripe.paymentIntents.retrieve(paymentId);
      return {
        paymentId: intent.id,
        orderId: null,
        amount: intent.amount,
        currency: intent.currency.toUpperCase(),
        status: intent.status,
        state: intentState(intent.status),
        pointers: pointersFromMetadata(intent.metadata),
      };
    } catch (error) {
      if (this.isNotFound(error)) return null;
      throw this.toAppError(error, 'retrievePayment');
    }
  }

  /**
   * Reading an intent that cannot exist proves reachability and a valid key (a bad key is 401, not 404)
   * with no side effects and with the same permission the service already needs. No retries: a health
   * probe should answer quickly.
   */
  async checkHealth(): Promise<void> {
    try {
      await this.stripe.paymentIntents.retrieve('pi_healthcheck', {}, { maxNetworkRetries: 0 });
    } catch (error) {
      if (this.isNotFound(error)) return;
      throw this.toAppError(error, 'checkHealth');
    }
  }

  async refund(request: RefundRequest): Promise<GatewayRefund> {
    assertMinorUnits('amount', request.amount, { allowZero: false });
    if (!paymentIntentId.test(request.paymentId)) {
      throw new InvalidRequestError('Not a gateway_a payment id', [
        { field: 'paymentId', message: 'is not a gateway_a payment' },
      ]);
    }
    try {
      const refund = await this.stripe.refunds.create(
        {
          payment_intent: request.paymentId,
          amount: request.amount,
          metadata: { refundId: request.refundId, ...(request.reason ? { reason: request.reason } : {}) },
        },
        { idempotencyKey: providerIdempotencyKey('rf', request.idempotencyKey) },
      );
      const read = toRefund(refundObject.parse(refund));
      if (!read)
        throw new GatewayError('gateway_a returned a refund without its payment', { gateway: 'gateway_a' });
      return read;
    } catch (error) {
      throw this.toAppError(error, 'refund');
    }
  }

  async listRefunds(paymentId: string): Promise<GatewayRefund[]> {
    if (!paymentIntentId.test(paymentId)) return [];
    try {
      const refunds = await this.stripe.refunds
        .list({ payment_intent: paymentId, limit: 100 })
        .autoPagingToArray({ limit: 10_000 });
      return refunds.flatMap((refund) => {
        const read = toRefund(refundObject.parse(refund));
        return read ? [read] : [];
      });
    } catch (error) {
      throw this.toAppError(error, 'listRefunds');
    }
  }

  /**
   * `stripe.webhooks.constructEvent`: the Stripe-Signature header's v1 HMAC over `t.payload` under the
   * endpoint's secret, and `t` no older than the tolerance at `receivedAt`.
   */
  async verifyEvent(event: SignedEvent): Promise<GatewayEvent> {
    const header = event.headers['stripe-signature'];
    if (!header || !this.options.webhookSecret) throw new InvalidSignatureError();
    const secret = await this.options.webhookSecret();
    let verified: Stripe.Event;
    try {
      verified = this.stripe.webhooks.constructEvent(
        event.rawBody,
        header,
        secret,
        EVENT_TOLERANCE_SECONDS,
        undefined,
        event.receivedAt.getTime(),
      );
    } catch {
      throw new InvalidSignatureError();
    }
    const envelope = eventEnvelope.safeParse(verified);
    if (!envelope.success) throw new InvalidSignatureError();
    const { id, type, created, data } = envelope.data;
    // constructEvent refuses an old signature time only: one (or an event) dated ahead is refused here.
    const signedAt = /(?:^|,)\s*t=(\d+)/.exec(header)?.[1];
    if (
      signedAt === undefined ||
      isFutureDated(new Date(Number(signedAt) * 1000), event.receivedAt) ||
      isFutureDated(new Date(created * 1000), event.receivedAt)
    ) {
      throw new InvalidSignatureError();
    }
    return { eventId: id, type, createdAt: new Date(created * 1000), facts: factsOf(type, data.object) };
  }

  private isNotFound(error: unknown): boolean {
    return (
      error instanceof this.stripe.errors.StripeInvalidRequestError &&
      (error.statusCode === 404 || error.code === 'resource_missing')
    );
  }

  private toAppError(error: unknown, operation: string): Error {
    const { errors } = this.stripe;
    if (error instanceof AppError) return error;
    if (error instanceof errors.StripeCardError) {
      const what = operation === 'refund' ? 'refund' : 'payment';
      return new PaymentDeclinedError(`The ${what} was declined by gateway_a`, {
        declineCode: error.decline_code ?? error.code ?? null,
      });
    }
    if (error instanceof errors.StripeIdempotencyError) {
      return new ConflictError('This receipt was already sent to gateway_a with different payment details');
    }
    // Parameter errors (amount too small, unsupported currency) are the caller's to fix, not an outage.
    if (error instanceof errors.StripeInvalidRequestError && error.param) {
      return new InvalidRequestError(
        'gateway_a rejected the payment parameters',
        [{ field: error.param, message: 'rejected by gateway_a' }],
        { code: error.code ?? null },
      );
    }
    if (error instanceof errors.StripeError) {
      // Provider messages can quote key prefixes, so only the classification goes into the details.
      return new GatewayError('gateway_a did not complete the request', {
        gateway: 'gateway_a',
        operation,
        type: error.type,
        statusCode: error.statusCode ?? null,
      });
    }
    return error instanceof Error ? error : new Error(String(error));
  }
}
