// Type-only: the SDK itself is loaded by the registry on first use, so cold starts that never pay skip it.
import type Stripe from 'stripe';
import {
  AppError,
  ConflictError,
  GatewayError,
  InvalidRequestError,
  PaymentDeclinedError,
} from '../kernel/errors.js';
import {
  assertMinorUnits,
  normaliseCurrency,
  pointerMetadata,
  pointersFromMetadata,
  providerIdempotencyKey,
} from './common.js';
import type { CreatedPayment, CreatePaymentRequest, GatewayPayment, PaymentGateway } from './port.js';

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

/** gateway_a: a PaymentIntent whose metadata holds the receipt pointers. */
export class StripeGateway implements PaymentGateway {
  readonly kind = 'gateway_a' as const;

  constructor(
    private readonly stripe: Stripe,
    /** The key's mode, for an answer that does not carry `livemode` itself. */
    private readonly liveKey = false,
  ) {}

  async createPayment(request: CreatePaymentRequest): Promise<CreatedPayment> {
    assertMinorUnits('amount', request.amount, { allowZero: false });
    const currency = normaliseCurrency(request.currency);
    const metadata = pointerMetadata(request.pointers);
    validateStripeMetadata(metadata);
    try {
      const intent = await this.stripe.paymentIntents.create(
        { amount: request.amount, currency: currency.toLowerCase(), metadata },
        { idempotencyKey: providerIdempotencyKey('pi', request.idempotencyKey) },
      );
      return {
        paymentId: intent.id,
        clientSecret: intent.client_secret,
        orderId: null,
        status: intent.status,
        amount: intent.amount,
        currency: intent.currency.toUpperCase(),
        livemode: typeof intent.livemode === 'boolean' ? intent.livemode : this.liveKey,
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
      return new PaymentDeclinedError('The payment was declined by gateway_a', {
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
