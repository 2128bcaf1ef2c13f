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
  /** gateway_b payment source; the sandbox/test nonce is used only when absent. */
  cardNonce?: string;
}

export interface CreatedPayment {
  paymentId: string;
  clientSecret: string | null;
  orderId: string | null;
  status: string;
  amount: number;
  currency: string;
  /** A live payment (real money): the provider's own answer where it gives one, else the credentials' mode. */
  livemode: boolean;
}

export interface GatewayPayment {
  paymentId: string;
  orderId: string | null;
  amount: number;
  currency: string;
  status: string;
  /** null when the payment carries no (or incomplete) receipt pointers. */
  pointers: ReceiptPointers | null;
}

export interface PaymentGateway {
  readonly kind: GatewayKind;
  /** PaymentDeclinedError on decline, GatewayError when unreachable after retries. */
  createPayment(request: CreatePaymentRequest): Promise<CreatedPayment>;
  /** null when the provider has no such payment. */
  retrievePayment(paymentId: string): Promise<GatewayPayment | null>;
  /** Throws GatewayError when the provider cannot be reached or rejects our credentials. */
  checkHealth(): Promise<void>;
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
