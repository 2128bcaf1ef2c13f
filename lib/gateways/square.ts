// Type-only: the SDK (about 0.5 s to import) is loaded by the registry on first use.
import type { Square, SquareClient, WebhooksHelper } from 'square';
import * as z from 'zod';
import { AppError, ConflictError, InvalidRequestError } from '../kernel/errors.js';
import { GatewayError, InvalidSignatureError, PaymentDeclinedError } from './vocabulary.js';
import {
  cardReferencesOf,
  assertMinorUnits,
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
  type PaymentLine,
  type PaymentState,
  type RefundRequest,
  type RefundState,
  type SignedEvent,
} from './port.js';

/** The test nonce that Square's sandbox (and the local gateway sandbox) approves. */
export const DEFAULT_CARD_NONCE = 'cnon:card-nonce-ok';

export interface SquareGatewayOptions {
  /**
   * Charge DEFAULT_CARD_NONCE when the request has no `cardNonce`. Only the local gateway sandbox
   * wiring sets it: against real credentials a missing nonce must be the caller's 400, never a charge
   * attempted with a test card.
   */
  testNonceFallback?: boolean;
  /** The credentials' environment is production: Square's payments do not say it themselves. */
  livemode?: boolean;
  /**
   * Webhook verification: the SDK's helper, the subscription's signature key and the notification
   * URL it was registered with (Square signs the URL with the body), read when the first event is.
   */
  webhooks?: {
    helper: Pick<typeof WebhooksHelper, 'verifySignature'>;
    signatureKey: () => Promise<string>;
    notificationUrl: () => Promise<string>;
  };
}

/**
 * How old a Square event may be. Unlike Stripe, which signs every delivery attempt anew (so 300 s is
 * enough there), Square re-sends the same body, with its first created_at, for up to 24 hours while
 * the endpoint fails: a shorter window would refuse Square's own redeliveries after any outage longer
 * than five minutes, and lose them. A replay inside the window is a duplicate (event ids are kept for
 * longer, lib/payments/gateway-events.ts), so the window costs nothing.
 */
export const SQUARE_EVENT_MAX_AGE_SECONDS = 24 * 3_600 + EVENT_TOLERANCE_SECONDS;

const paymentStates: Record<string, PaymentState> = {
  APPROVED: 'pending',
  PENDING: 'pending',
  COMPLETED: 'succeeded',
  CANCELED: 'canceled',
  FAILED: 'failed',
};
const paymentState = (status: string | null | undefined): PaymentState =>
  paymentStates[status ?? ''] ?? 'pending';

const refundStates: Record<string, RefundState> = {
  PENDING: 'pending',
  COMPLETED: 'succeeded',
  REJECTED: 'failed',
  FAILED: 'failed',
};

/** The parts of Square's webhook JSON (snake_case, as on the wire) the service reads. */
const wireMoney = z.object({ amount: z.number().int(), currency: z.string() });
const wireRefund = z.object({
  id: z.string(),
  status: z.string().nullable().optional(),
  amount_money: wireMoney,
  payment_id: z.string().nullable().optional(),
  created_at: z.string(),
  destination_details: z
    .object({
      card_details: z
        .object({
          auth_result_code: z.string().nullable().optional(),
          card: z
            .object({
              card_brand: z.string().nullable().optional(),
              last_4: z.string().nullable().optional(),
            })
            .nullable()
            .optional(),
        })
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
});
const wirePayment = z.object({ id: z.string(), status: z.string().nullable().optional() });
const wireEvent = z.object({
  event_id: z.string().min(1),
  type: z.string(),
  created_at: z.iso.datetime({ offset: true }),
  data: z
    .object({
      object: z
        .object({ payment: z.unknown().optional(), refund: z.unknown().optional() })
        .nullable()
        .optional(),
    })
    .nullable()
    .optional(),
});

/** A card payment's references, as Square documents them on the payment's `card_details`. */
function paymentReferences(payment: Square.Payment): CardReferences | null {
  const details = payment.cardDetails;
  if (!details) return null;
  return cardReferencesOf({
    network: details.card?.cardBrand,
    authorizationCode: details.authResultCode,
    last4: details.card?.last4,
    statementDescriptor: details.statementDescription,
    providerIds: { paymentId: payment.id },
  });
}

function factsOf(event: z.infer<typeof wireEvent>): GatewayFact[] {
  const object = event.data?.object;
  if (event.type === 'payment.created' || event.type === 'payment.updated') {
    const payment = wirePayment.safeParse(object?.payment);
    return payment.success
      ? [{ kind: 'payment', paymentId: payment.data.id, state: paymentState(payment.data.status) }]
      : [];
  }
  if (event.type === 'refund.created' || event.type === 'refund.updated') {
    const refund = wireRefund.safeParse(object?.refund);
    if (!refund.success || !refund.data.payment_id) return [];
    const { id, status, amount_money, payment_id, created_at, destination_details } = refund.data;
    const card = destination_details?.card_details;
    return [
      {
        kind: 'refund',
        refund: {
          references: cardReferencesOf({
            network: card?.card?.card_brand,
            authorizationCode: card?.auth_result_code,
            last4: card?.card?.last_4,
            providerIds: { paymentId: payment_id, refundId: id },
          }),
          providerRefundId: id,
          paymentId: payment_id,
          amount: amount_money.amount,
          currency: amount_money.currency,
          state: refundStates[status ?? ''] ?? 'pending',
          refundId: null,
          createdAt: created_at,
        },
      },
    ];
  }
  return [];
}

export const squareMetadataLimits = { maxEntries: 10, maxKeyLength: 60, maxValueLength: 255 } as const;
const REFERENCE_ID_MAX = 40;
const LINE_NAME_MAX = 512;
/** Square object ids; anything else cannot exist there and is not sent to the API as a path. */
const squareId = /^[A-Za-z0-9_-]{1,192}$/;

export function validateSquareMetadata(metadata: Record<string, string>): void {
  const problems: string[] = [];
  const keys = Object.keys(metadata);
  if (keys.length > squareMetadataLimits.maxEntries) {
    problems.push(`at most ${squareMetadataLimits.maxEntries} entries are allowed, got ${keys.length}`);
  }
  for (const key of keys) {
    if (!/^[A-Za-z0-9_-]{1,60}$/.test(key)) {
      problems.push(`key "${key.slice(0, 70)}" must be 1-60 characters of [A-Za-z0-9_-]`);
    }
    const value = metadata[key] ?? '';
    if (value.length === 0 || value.length > squareMetadataLimits.maxValueLength) {
      problems.push(
        `value of "${key.slice(0, 70)}" must be 1-${squareMetadataLimits.maxValueLength} characters`,
      );
    }
  }
  if (problems.length > 0) {
    throw new InvalidRequestError(
      'Payment metadata exceeds the gateway_b limits',
      problems.map((message) => ({ field: 'metadata', message })),
    );
  }
}

const money = (amount: number, currency: Square.Currency): Square.Money => ({
  amount: BigInt(amount),
  currency,
});

/** The SDK hands money back as bigint; the rest of the service works in plain numbers. */
function minorUnits(value: Square.Money | undefined, what: string): number {
  const amount = value?.amount;
  const parsed = typeof amount === 'bigint' || typeof amount === 'number' ? Number(amount) : Number.NaN;
  if (!Number.isSafeInteger(parsed)) {
    throw new GatewayError('gateway_b returned an unusable amount', { gateway: 'gateway_b', field: what });
  }
  return parsed;
}

/**
 * One order line per receipt line. Square multiplies quantity by base price itself, so a line whose
 * total is not exactly quantity × unit price (discounts, fractional quantities) is sent as one unit at
 * its total, with the real quantity in the note: the order total must match the charge to the cent.
 */
function orderLine(line: PaymentLine, currency: Square.Currency): Square.OrderLineItem {
  assertMinorUnits('lines.totalPrice', line.totalPrice, { allowZero: true });
  const name = line.name.trim().slice(0, LINE_NAME_MAX) || 'Item';
  const exact =
    Number.isSafeInteger(line.quantity) &&
    line.quantity > 0 &&
    Number.isSafeInteger(line.unitPrice) &&
    line.unitPrice >= 0 &&
    line.quantity * line.unitPrice === line.totalPrice;
  if (exact) {
    return { name, quantity: String(line.quantity), basePriceMoney: money(line.unitPrice, currency) };
  }
  return {
    name,
    quantity: '1',
    note: `quantity ${line.quantity} at ${line.unitPrice} (minor units) each`,
    basePriceMoney: money(line.totalPrice, currency),
  };
}

interface SquareBodyError {
  category?: string;
  code?: string;
}

/** The SDK's error classes are not reachable without importing it at runtime, so match their shape. */
function isSquareError(error: unknown): error is Error & { statusCode?: number; errors: SquareBodyError[] } {
  return (
    error instanceof Error &&
    error.name === 'SquareError' &&
    Array.isArray((error as { errors?: unknown }).errors)
  );
}

/** gateway_b: an Order built from the receipt lines (pointers in its metadata), paid by one Payment. */
export class SquareGateway implements PaymentGateway {
  readonly kind = 'gateway_b' as const;

  private readonly testNonceFallback: boolean;

  constructor(
    private readonly client: SquareClient,
    private readonly locationId: string,
    private readonly options: SquareGatewayOptions = {},
  ) {
    this.testNonceFallback = options.testNonceFallback ?? false;
    this.livemode = options.livemode ?? false;
  }

  private readonly livemode: boolean;

  async createPayment(request: CreatePaymentRequest): Promise<CreatedPayment> {
    const currency = normaliseCurrency(request.currency) as Square.Currency;
    const order = this.buildOrder(request, currency);
    const sourceId = request.cardNonce ?? (this.testNonceFallback ? DEFAULT_CARD_NONCE : undefined);
    // Checked before the order is created, so a refused request leaves nothing at Square.
    if (!sourceId) {
      throw new InvalidRequestError('gateway_b payments need the card nonce from the point of sale', [
        { field: 'cardNonce', message: 'is required for gateway_b' },
      ]);
    }
    const referenceId =
      request.pointers.receiptId.length <= REFERENCE_ID_MAX ? request.pointers.receiptId : undefined;
    try {
      const { order: created } = await this.client.orders.create({
        order: { ...order, referenceId },
        idempotencyKey: providerIdempotencyKey('ord', request.idempotencyKey),
      });
      const orderId = created?.id;
      if (!orderId) throw new GatewayError('gateway_b returned no order', { gateway: 'gateway_b' });
      const total = minorUnits(created.totalMoney, 'order.total_money');
      // A location with auto-applied taxes or fees would change the total; never charge a different amount.
      if (total !== request.amount) {
        throw new GatewayError('gateway_b computed an order total different from the amount', {
          gateway: 'gateway_b',
          orderTotal: total,
          amount: request.amount,
        });
      }
      const { payment } = await this.client.payments.create({
        sourceId,
        idempotencyKey: providerIdempotencyKey('pay', request.idempotencyKey),
        amountMoney: money(total, currency),
        orderId,
        locationId: this.locationId,
        referenceId,
        autocomplete: true,
      });
      if (!payment?.id) throw new GatewayError('gateway_b returned no payment', { gateway: 'gateway_b' });
      return {
        paymentId: payment.id,
        clientSecret: null,
        orderId,
        status: payment.status ?? 'UNKNOWN',
        state: paymentState(payment.status),
        amount: minorUnits(payment.amountMoney, 'payment.amount_money'),
        currency: payment.amountMoney?.currency ?? currency,
        livemode: this.livemode,
        references: paymentReferences(payment),
      };
    } catch (error) {
      throw this.toAppError(error, 'createPayment');
    }
  }

  /** Square payments carry no metadata, so the pointers are read from the payment's order. */
  async retrievePayment(paymentId: string): Promise<GatewayPayment | null> {
    if (!squareId.test(paymentId)) return null;
    try {
      const { payment } = await this.client.payments.get({ paymentId });
      if (!payment?.id) return null;
      const orderId = payment.orderId ?? null;
      const order = orderId && squareId.test(orderId) ? await this.findOrder(orderId) : null;
      return {
        paymentId: payment.id,
        orderId,
        amount: minorUnits(payment.amountMoney, 'payment.amount_money'),
        currency: payment.amountMoney?.currency ?? 'UNKNOWN',
        status: payment.status ?? 'UNKNOWN',
        state: paymentState(payment.status),
        pointers: pointersFromMetadata(order?.metadata),
      };
    } catch (error) {
      if (isSquareError(error) && error.statusCode === 404) return null;
      throw this.toAppError(error, 'retrievePayment');
    }
  }

  /** Reading the configured location checks reachability, the token and the location id at once. */
  async checkHealth(): Promise<void> {
    try {
      await this.client.locations.get({ locationId: this.locationId }, { maxRetries: 0 });
    } catch (error) {
      throw this.toAppError(error, 'checkHealth');
    }
  }

  async refund(request: RefundRequest): Promise<GatewayRefund> {
    assertMinorUnits('amount', request.amount, { allowZero: false });
    if (!squareId.test(request.paymentId)) {
      throw new InvalidRequestError('Not a gateway_b payment id', [
        { field: 'paymentId', message: 'is not a gateway_b payment' },
      ]);
    }
    try {
      // Square keeps no metadata on a refund: the service links it to the request by its id.
      const { refund } = await this.client.refunds.refundPayment({
        idempotencyKey: providerIdempotencyKey('rf', request.idempotencyKey),
        paymentId: request.paymentId,
        amountMoney: money(request.amount, normaliseCurrency(request.currency) as Square.Currency),
        ...(request.reason ? { reason: request.reason.slice(0, 192) } : {}),
      });
      if (!refund?.id) throw new GatewayError('gateway_b returned no refund', { gateway: 'gateway_b' });
      return this.toRefund(refund, request.paymentId);
    } catch (error) {
      throw this.toAppError(error, 'refund');
    }
  }

  /** A Square payment lists its refunds' ids; each is read on its own. */
  async listRefunds(paymentId: string): Promise<GatewayRefund[]> {
    if (!squareId.test(paymentId)) return [];
    try {
      const { payment } = await this.client.payments.get({ paymentId });
      const ids = (payment?.refundIds ?? []).filter((id) => squareId.test(id));
      const refunds = await Promise.all(ids.map((refundId) => this.client.refunds.get({ refundId })));
      return refunds.flatMap(({ refund }) => (refund?.id ? [this.toRefund(refund, paymentId)] : []));
    } catch (error) {
      if (isSquareError(error) && error.statusCode === 404) return [];
      throw this.toAppError(error, 'listRefunds');
    }
  }

  /**
   * The square SDK's WebhooksHelper: the x-square-hmacsha256-signature header against the HMAC of
   * notification URL + body under the subscription's key. Square's signature has no time in it, so
   * an event is refused as stale by its created_at (SQUARE_EVENT_MAX_AGE_SECONDS).
   */
  async verifyEvent(event: SignedEvent): Promise<GatewayEvent> {
    const signatureHeader = event.headers['x-square-hmacsha256-signature'];
    const webhooks = this.options.webhooks;
    if (!signatureHeader || !webhooks) throw new InvalidSignatureError();
    const [signatureKey, notificationUrl] = await Promise.all([
      webhooks.signatureKey(),
      webhooks.notificationUrl(),
    ]);
    let valid: boolean;
    try {
      valid = await webhooks.helper.verifySignature({
        requestBody: event.rawBody,
        signatureHeader,
        signatureKey,
        notificationUrl,
      });
    } catch {
      valid = false;
    }
    if (!valid) throw new InvalidSignatureError();
    let parsed: z.infer<typeof wireEvent>;
    try {
      parsed = wireEvent.parse(JSON.parse(event.rawBody));
    } catch {
      throw new InvalidSignatureError();
    }
    const createdAt = new Date(parsed.created_at);
    if (
      Number.isNaN(createdAt.getTime()) ||
      event.receivedAt.getTime() - createdAt.getTime() > SQUARE_EVENT_MAX_AGE_SECONDS * 1000 ||
      isFutureDated(createdAt, event.receivedAt)
    ) {
      throw new InvalidSignatureError();
    }
    return { eventId: parsed.event_id, type: parsed.type, createdAt, facts: factsOf(parsed) };
  }

  private toRefund(refund: Square.PaymentRefund, paymentId: string): GatewayRefund {
    const card = refund.destinationDetails?.cardDetails;
    return {
      references: cardReferencesOf({
        network: card?.card?.cardBrand,
        authorizationCode: card?.authResultCode,
        last4: card?.card?.last4,
        providerIds: { paymentId: refund.paymentId ?? paymentId, refundId: refund.id },
      }),
      providerRefundId: refund.id,
      paymentId: refund.paymentId ?? paymentId,
      amount: minorUnits(refund.amountMoney, 'refund.amount_money'),
      currency: refund.amountMoney.currency ?? 'UNKNOWN',
      state: refundStates[refund.status ?? ''] ?? 'pending',
      refundId: null,
      createdAt: refund.createdAt ?? new Date(0).toISOString(),
    };
  }

  private buildOrder(request: CreatePaymentRequest, currency: Square.Currency): Square.Order {
    assertMinorUnits('amount', request.amount, { allowZero: false });
    assertMinorUnits('taxAmount', request.taxAmount, { allowZero: true });
    if (request.lines.length === 0) {
      throw new InvalidRequestError('gateway_b payments need at least one line item', [
        { field: 'items', message: 'must not be empty for gateway_b' },
      ]);
    }
    const linesTotal = request.lines.reduce((sum, line) => sum + line.totalPrice, 0);
    const allowances = request.adjustments?.allowances ?? [];
    const charges = request.adjustments?.charges ?? [];
    const adjusted = (entries: readonly { amount: number }[]) =>
      entries.reduce((sum, entry) => sum + entry.amount, 0);
    for (const [index, entry] of [...allowances, ...charges].entries()) {
      assertMinorUnits(`adjustments[${index}].amount`, entry.amount, { allowZero: true });
    }
    if (linesTotal - adjusted(allowances) + adjusted(charges) + request.taxAmount !== request.amount) {
      throw new InvalidRequestError(
        'Line totals less allowances plus charges and tax must equal the amount charged',
        [{ field: 'amount', message: 'must equal the line totals less allowances plus charges and tax' }],
        {
          linesTotal,
          taxAmount: request.taxAmount,
          amount: request.amount,
        },
      );
    }
    const metadata = pointerMetadata(request.pointers);
    validateSquareMetadata(metadata);
    // The SDK has no fixed-amount order tax (its taxes are percentages, which round), so the receipt's
    // exact tax is a fixed, non-taxable service charge applied after everything else.
    const tax: Square.OrderServiceCharge[] =
      request.taxAmount > 0
        ? [
            {
              name: 'Tax',
              amountMoney: money(request.taxAmount, currency),
              calculationPhase: 'TOTAL_PHASE',
              taxable: false,
            },
          ]
        : [];
    // Document-level allowances and charges (DigitalReceipt 1.2) are the order's own fixed discounts
    // and service charges, so the order's total is the receipt's; zero ones are left out.
    const discounts: Square.OrderLineItemDiscount[] = allowances
      .filter((entry) => entry.amount > 0)
      .map((entry) => ({
        name: entry.reason.slice(0, LINE_NAME_MAX),
        type: 'FIXED_AMOUNT',
        scope: 'ORDER',
        amountMoney: money(entry.amount, currency),
      }));
    const serviceCharges: Square.OrderServiceCharge[] = charges
      .filter((entry) => entry.amount > 0)
      .map((entry) => ({
        name: entry.reason.slice(0, LINE_NAME_MAX),
        amountMoney: money(entry.amount, currency),
        calculationPhase: 'SUBTOTAL_PHASE',
        taxable: false,
      }));
    return {
      locationId: this.locationId,
      lineItems: request.lines.map((line) => orderLine(line, currency)),
      ...(discounts.length > 0 ? { discounts } : {}),
      serviceCharges: [...serviceCharges, ...tax],
      metadata,
    };
  }

  private async findOrder(orderId: string): Promise<Square.Order | null> {
    try {
      return (await this.client.orders.get({ orderId })).order ?? null;
    } catch (error) {
      if (isSquareError(error) && error.statusCode === 404) return null;
      throw error;
    }
  }

  private toAppError(error: unknown, operation: string): Error {
    if (error instanceof AppError) return error;
    if (isSquareError(error)) {
      const declined = error.errors.find((e) => e.category === 'PAYMENT_METHOD_ERROR');
      if (declined) {
        const what = operation === 'refund' ? 'refund' : 'payment';
        return new PaymentDeclinedError(`The ${what} was declined by gateway_b`, {
          declineCode: declined.code ?? null,
        });
      }
      if (error.errors.some((e) => e.code === 'IDEMPOTENCY_KEY_REUSED')) {
        return new ConflictError('This receipt was already sent to gateway_b with different payment details');
      }
      // Square refusing what the caller sent (an unknown card nonce, say) is the caller's to fix, and
      // a 502 would tell the caller to retry the same request.
      const refused = error.errors.filter((e) => e.category === 'INVALID_REQUEST_ERROR');
      if (refused.length > 0 && (error.statusCode === 400 || error.statusCode === 404)) {
        const field = operation === 'refund' ? 'amount' : 'cardNonce';
        return new InvalidRequestError(
          `gateway_b refused the ${operation === 'refund' ? 'refund' : 'payment details'}`,
          [{ field, message: 'was refused by gateway_b' }],
          { gateway: 'gateway_b', codes: refused.map((e) => e.code ?? 'UNKNOWN') },
        );
      }
      return new GatewayError('gateway_b did not complete the request', {
        gateway: 'gateway_b',
        operation,
        statusCode: error.statusCode ?? null,
        codes: error.errors.map((e) => e.code ?? 'UNKNOWN'),
      });
    }
    if (error instanceof Error && error.name === 'SquareTimeoutError') {
      return new GatewayError('gateway_b timed out', { gateway: 'gateway_b', operation });
    }
    return error instanceof Error ? error : new Error(String(error));
  }
}
