/**
 * The payment-gateway port. Handlers depend only on these types; lib/gateways/stripe.ts and
 * lib/gateways/square.ts adapt the providers' SDKs to them, and lib/gateways/registry.ts builds them.
 */
import type { GatewayKind } from '../kernel/gateway-kind.js';

export { type GatewayKind, gatewayKinds } from '../kernel/gateway-kind.js';

/** What the payment carries instead of the receipt: enough to find the stored envelope again. */
export interface ReceiptPointers {
  receiptId: string;
  transactionId: string;
  merchantId: string;
}

/** Amounts in minor units. */
export interface PaymentLine {
  name: string;
  quantity: number;
  unitPrice: number;
  totalPrice: number;
}

export interface PaymentAdjustment {
  reason: string;
  amount: number;
}

export interface CreatePaymentRequest {
  /** Stable per receipt; each adapter derives its provider keys from it. */
  idempotencyKey: string;
  /** Minor units actually charged. */
  amount: number;
  /** ISO 4217, upper case. */
  currency: string;
  pointers: ReceiptPointers;
  /** gateway_b builds the order from these. */
  lines: PaymentLine[];
  /** gateway_b adds it to the order so the order total equals `amount`. */
  taxAmount: number;
  /**
   * The receipt's document-level allowances and charges (DigitalReceipt 1.2), net amounts: gateway_b
   * gives them to the order as fixed discounts and service charges, so its total equals `amount`.
   */
  adjustments?: { allowances: PaymentAdjustment[]; charges: PaymentAdjustment[] };
  /** gateway_b payment source; the sandbox/test nonce is used only when absent. */
  cardNonce?: string;
  /**
   * gateway_a: a payment method (`pm_…`) to confirm the intent with at once, server-side (a card on
   * file, a terminal's card): the payment is then charged at create and its network references known.
   */
  paymentMethod?: string;
}

/**
 * The card network's references of a charge or a refund, as the provider gives them (DECISIONS,
 * round 4, "Card-network references"): what it does not give is absent, never made up.
 */
export interface CardReferences {
  /** Lower case: 'visa', 'mastercard', … */
  network?: string;
  authorizationCode?: string;
  networkTransactionId?: string;
  last4?: string;
  statementDescriptor?: string;
  merchantCategoryCode?: string;
  /** A refund's reference at the network (Stripe's acquirer reference number). */
  acquirerReferenceNumber?: string;
  providerIds: { paymentIntentId?: string; chargeId?: string; paymentId?: string; refundId?: string };
}

/**
 * A payment's state in the service's words: `pending` until the money moves (a gateway_a intent
 * awaiting confirmation), then `succeeded`, `failed` (a gateway_a intent may still succeed after it)
 * or `canceled`. Refunds are counted apart (GatewayRefund).
 */
export type PaymentState = 'pending' | 'succeeded' | 'failed' | 'canceled';
/** A refund's state: `pending` until the provider settles it. */
export type RefundState = 'pending' | 'succeeded' | 'failed' | 'canceled';

export interface CreatedPayment {
  paymentId: string;
  clientSecret: string | null;
  orderId: string | null;
  /** The provider's own word for it, as the mapping records it. */
  status: string;
  state: PaymentState;
  amount: number;
  currency: string;
  /** A live payment (real money): the provider's own answer where it gives one, else the credentials' mode. */
  livemode: boolean;
  /** The charge's network references; null while nothing is charged (an unconfirmed gateway_a intent). */
  references: CardReferences | null;
}

export interface GatewayPayment {
  paymentId: string;
  orderId: string | null;
  amount: number;
  currency: string;
  status: string;
  state: PaymentState;
  /** null when the payment carries no (or incomplete) receipt pointers. */
  pointers: ReceiptPointers | null;
}

export interface RefundRequest {
  paymentId: string;
  /** Minor units. */
  amount: number;
  /** ISO 4217, upper case: the payment's. */
  currency: string;
  /** Stable per refund request; each adapter derives its provider key from it. */
  idempotencyKey: string;
  /** The merchant's refundId, kept by the provider where it can keep one (gateway_a metadata). */
  refundId: string;
  reason?: string;
}

/** A refund as the provider has it. */
export interface GatewayRefund {
  /** The provider's id of the refund (`re_…`, a Square refund id). */
  providerRefundId: string;
  paymentId: string;
  amount: number;
  currency: string;
  state: RefundState;
  /** The merchant's refundId when the refund was asked of the service and the provider kept it. */
  refundId: string | null;
  createdAt: string;
  /** The refund's network references, when the provider gives any. */
  references?: CardReferences | null;
}

/** What one provider event says, in the service's words; an event the service has no use for says nothing. */
export type GatewayFact =
  | { kind: 'payment'; paymentId: string; state: PaymentState }
  | { kind: 'refund'; refund: GatewayRefund }
  /** The payment's refunds changed and the event does not list them: read them (listRefunds). */
  | { kind: 'refunds-changed'; paymentId: string };

/** A provider webhook whose signature (and age) the provider's SDK has verified. */
export interface GatewayEvent {
  eventId: string;
  type: string;
  createdAt: Date;
  facts: GatewayFact[];
}

export interface SignedEvent {
  /** The request body exactly as it arrived. */
  rawBody: string;
  /** Request headers, names lower-cased. */
  headers: Record<string, string | undefined>;
  receivedAt: Date;
}

/** How old a signed event may be: Stripe's default tolerance, applied to both providers. */
export const EVENT_TOLERANCE_SECONDS = 300;

/**
 * Whether a signed event's time is further ahead of `receivedAt` than the tolerance: refused like a
 * stale one (a provider's clock is not minutes ahead; a date in the future would outlive any window).
 */
export const isFutureDated = (at: Date, receivedAt: Date): boolean =>
  at.getTime() - receivedAt.getTime() > EVENT_TOLERANCE_SECONDS * 1000;

export interface PaymentGateway {
  readonly kind: GatewayKind;
  /** PaymentDeclinedError on decline, GatewayError when unreachable after retries. */
  createPayment(request: CreatePaymentRequest): Promise<CreatedPayment>;
  /** null when the provider has no such payment. */
  retrievePayment(paymentId: string): Promise<GatewayPayment | null>;
  /** Throws GatewayError when the provider cannot be reached or rejects our credentials. */
  checkHealth(): Promise<void>;
  /** PaymentDeclinedError when the provider refuses the refund, GatewayError when unreachable. */
  refund(request: RefundRequest): Promise<GatewayRefund>;
  /** Every refund of the payment, as the provider has them. */
  listRefunds(paymentId: string): Promise<GatewayRefund[]>;
  /**
   * Checks a provider webhook with the provider's SDK and reads it: InvalidSignatureError when the
   * signature is missing or wrong, or the event is older than EVENT_TOLERANCE_SECONDS or dated more
   * than that ahead (isFutureDated).
   */
  verifyEvent(event: SignedEvent): Promise<GatewayEvent>;
}

export interface GatewayRegistry {
  configured(): GatewayKind[];
  get(kind: GatewayKind): Promise<PaymentGateway>;
}

const aliases: Record<string, GatewayKind> = {
  gateway_a: 'gateway_a',
  stripe: 'gateway_a',
  gateway_b: 'gateway_b',
  square: 'gateway_b',
};

/** Accepts the wire names and the provider aliases; what is stored and returned is always the wire name. */
export function parseGatewayKind(value: string): GatewayKind | null {
  return Object.hasOwn(aliases, value) ? (aliases[value] ?? null) : null;
}
