import {
  bearerToken,
  canonicalJson,
  IdempotencyStore,
  randomAuthorizationCode,
  randomDigits,
  randomId,
} from './api.js';
import type { ApiRequest, ApiResponse, DashboardRefunds, ProviderApi, SandboxContext } from './api.js';

/**
 * The slice of Stripe's v1 wire API that lib/gateways/stripe.ts uses (form-encoded PaymentIntents and
 * Refunds), plus what a till and Stripe's dashboard do: confirming an intent with a test payment
 * method (`pm_card_visa` succeeds, `pm_card_chargeDeclined` is declined), canceling it, and refunding.
 * Each change sends the event Stripe would (./events.ts).
 */

/** Stripe's test payment methods that decline; any other `pm_card_…` succeeds. */
export const DECLINING_PAYMENT_METHODS = [
  'pm_card_chargeDeclined',
  'pm_card_chargeDeclinedInsufficientFunds',
  'pm_card_chargeDeclinedExpiredCard',
];

type FormValue = string | FormObject;
interface FormObject {
  [key: string]: FormValue;
}

interface StripeErrorBody {
  type: string;
  message: string;
  code?: string;
  param?: string;
  decline_code?: string;
}

const stripeError = (status: number, error: StripeErrorBody): ApiResponse => ({
  status,
  body: { error },
  headers: { 'Request-Id': `req_${randomId(14)}` },
});

const invalid = (param: string, message: string, code = 'parameter_invalid'): ApiResponse =>
  stripeError(400, { type: 'invalid_request_error', code, param, message });

/** Stripe's bracket notation (`metadata[receiptId]=…`) back into objects. */
function parseForm(body: string): FormObject {
  const root: FormObject = {};
  for (const [rawKey, value] of new URLSearchParams(body)) {
    const [head = '', ...rest] = rawKey.split('[');
    const path = [head, ...rest.map((segment) => segment.replace(/]$/, ''))];
    if (path.some((segment) => ['__proto__', 'constructor', 'prototype'].includes(segment))) continue;
    let node = root;
    path.forEach((segment, index) => {
      if (index === path.length - 1) {
        node[segment] = value;
        return;
      }
      const next = node[segment];
      node = typeof next === 'object' ? next : (node[segment] = {});
    });
  }
  return root;
}

function checkMetadata(metadata: FormValue | undefined): ApiResponse | null {
  if (metadata === undefined) return null;
  if (typeof metadata === 'string') return invalid('metadata', 'Invalid object');
  const entries = Object.entries(metadata);
  if (entries.length > 50) return invalid('metadata', 'Metadata can have at most 50 keys');
  for (const [key, value] of entries) {
    if (key.length > 40) return invalid('metadata', `Metadata key "${key}" is longer than 40 characters`);
    if (typeof value !== 'string') {
      return invalid('metadata', `Metadata key "${key}" must not contain "[" or "]"`);
    }
    if (value.length > 500) {
      return invalid('metadata', `Metadata value for "${key}" is longer than 500 characters`);
    }
  }
  return null;
}

type Json = Record<string, unknown>;

/** The card behind each test payment method the sandbox knows; any other `pm_card_…` is a Visa. */
const TEST_CARDS: Record<string, { network: string; brand: string; last4: string }> = {
  pm_card_visa: { network: 'visa', brand: 'visa', last4: '4242' },
  pm_card_mastercard: { network: 'mastercard', brand: 'mastercard', last4: '4444' },
  pm_card_amex: { network: 'amex', brand: 'amex', last4: '8431' },
};

/** The account's statement descriptor: what Stripe's `calculated_statement_descriptor` gives. */
export const SANDBOX_STATEMENT_DESCRIPTOR = 'RECEIPTS SANDBOX';

/** Whether a request asks for an object expanded (`expand[0]=latest_charge`). */
const expands = (params: FormObject, field: string): boolean =>
  typeof params.expand === 'object' && Object.values(params.expand).includes(field);

export function stripeApi(context: SandboxContext): ProviderApi & DashboardRefunds {
  const intents = context.journal.store<Json>('stripe.paymentIntents');
  const charges = context.journal.store<Json>('stripe.charges');
  const refunds = context.journal.store<Json>('stripe.refunds');
  const intentRefunds = context.journal.store<string[]>('stripe.intentRefunds');
  const idempotency = new IdempotencyStore(context.journal.store('stripe.idempotency'));
  const now = () => Math.floor(context.clock.now().getTime() / 1000);
  const ok = (body: unknown): ApiResponse => ({
    status: 200,
    body,
    headers: { 'Request-Id': `req_${randomId(14)}` },
  });
  const missing = (kind: string, id: string) =>
    stripeError(404, {
      type: 'invalid_request_error',
      code: 'resource_missing',
      param: kind === 'payment_intent' ? 'intent' : kind,
      message: `No such ${kind}: '${id}'`,
    });

  /** Answers a request once per idempotency key, as Stripe does; without a key, every time. */
  function idempotent(request: ApiRequest, params: FormObject, execute: () => ApiResponse): ApiResponse {
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || key.length === 0) return execute();
    const mismatch = () =>
      stripeError(400, {
        type: 'idempotency_error',
        message: `Keys for idempotent requests can only be used with the same parameters they were first used with (key '${key}').`,
      });
    return idempotency.run(`${request.params.join('/')}:${key}`, canonicalJson(params), mismatch, execute);
  }

  function confirmIntent(id: string, params: FormObject, decline: boolean): ApiResponse {
    const intent = intents.get(id);
    if (!intent) return missing('payment_intent', id);
    if (!['requires_payment_method', 'requires_confirmation'].includes(String(intent.status))) {
      return stripeError(400, {
        type: 'invalid_request_error',
        code: 'payment_intent_unexpected_state',
        message: `This PaymentIntent's status is ${String(intent.status)}: it cannot be confirmed.`,
      });
    }
    const method = typeof params.payment_method === 'string' ? params.payment_method : '';
    if (!method.startsWith('pm_'))
      return invalid('payment_method', 'A payment method is required to confirm');
    if (decline || DECLINING_PAYMENT_METHODS.includes(method)) {
      const failed = {
        ...intent,
        status: 'requires_payment_method',
        last_payment_error: {
          type: 'card_error',
          code: 'card_declined',
          decline_code: 'generic_decline',
          message: 'Your card was declined.',
        },
      };
      intents.set(id, failed);
      context.events.stripe('payment_intent.payment_failed', failed);
      return stripeError(402, {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'generic_decline',
        message: 'Your card was declined.',
      });
    }
    return ok(chargeIntent(intent, method, params));
  }

  /**
   * The charge of a confirmed intent, with its card's network references as Stripe documents them
   * (`payment_method_details.card`: network, authorization_code, network_transaction_id, last4; the
   * charge's calculated_statement_descriptor), distinct per charge. The intent is `succeeded`.
   */
  function chargeIntent(intent: Json, method: string, params: FormObject): Json {
    const id = String(intent.id);
    const card = TEST_CARDS[method] ?? { network: 'visa', brand: 'visa', last4: '4242' };
    const chargeId = `ch_${randomId(24)}`;
    const charge = {
      id: chargeId,
      object: 'charge',
      amount: intent.amount,
      amount_captured: intent.amount,
      amount_refunded: 0,
      currency: intent.currency,
      payment_intent: id,
      payment_method: method,
      paid: true,
      refunded: false,
      status: 'succeeded',
      created: now(),
      livemode: false,
      metadata: intent.metadata,
      calculated_statement_descriptor: SANDBOX_STATEMENT_DESCRIPTOR,
      payment_method_details: {
        type: 'card',
        card: {
          brand: card.brand,
          network: card.network,
          last4: card.last4,
          exp_month: 12,
          exp_year: 2030,
          funding: 'credit',
          authorization_code: randomAuthorizationCode(),
          network_transaction_id: randomDigits(15),
        },
      },
    };
    charges.set(chargeId, charge);
    const succeeded = {
      ...intent,
      status: 'succeeded',
      payment_method: method,
      amount_received: intent.amount,
      latest_charge: chargeId,
      last_payment_error: null,
    };
    intents.set(id, succeeded);
    context.events.stripe('payment_intent.succeeded', succeeded);
    return expands(params, 'latest_charge') ? { ...succeeded, latest_charge: charge } : succeeded;
  }

  function cancelIntent(id: string): ApiResponse {
    const intent = intents.get(id);
    if (!intent) return missing('payment_intent', id);
    if (['succeeded', 'canceled'].includes(String(intent.status))) {
      return stripeError(400, {
        type: 'invalid_request_error',
        code: 'payment_intent_unexpected_state',
        message: `You cannot cancel this PaymentIntent because it has a status of ${String(intent.status)}.`,
      });
    }
    const canceled = {
      ...intent,
      status: 'canceled',
      canceled_at: now(),
      cancellation_reason: 'requested_by_customer',
    };
    intents.set(id, canceled);
    context.events.stripe('payment_intent.canceled', canceled);
    return ok(canceled);
  }

  /** A refund of a succeeded intent's charge, through the API or the dashboard alike. */
  function createRefund(params: FormObject, decline: boolean): ApiResponse {
    const id = typeof params.payment_intent === 'string' ? params.payment_intent : '';
    const intent = intents.get(id);
    if (!intent) return missing('payment_intent', id);
    const charge = charges.get(String(intent.latest_charge ?? ''));
    if (intent.status !== 'succeeded' || !charge) {
      return stripeError(400, {
        type: 'invalid_request_error',
        code: 'charge_not_refundable',
        message: 'This PaymentIntent has no succeeded charge to refund.',
      });
    }
    const left = Number(charge.amount) - Number(charge.amount_refunded);
    if (left <= 0) {
      return stripeError(400, {
        type: 'invalid_request_error',
        code: 'charge_already_refunded',
        message: `Charge ${String(charge.id)} has already been refunded.`,
      });
    }
    const amount = params.amount === undefined ? left : Number(params.amount);
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      return invalid('amount', 'Invalid positive integer', 'parameter_invalid_integer');
    }
    if (amount > left) {
      return stripeError(400, {
        type: 'invalid_request_error',
        code: 'amount_too_large',
        param: 'amount',
        message: `Refund amount (${amount}) is greater than unrefunded amount on charge (${left})`,
      });
    }
    const metadataProblem = checkMetadata(params.metadata);
    if (metadataProblem) return metadataProblem;
    if (decline) {
      return stripeError(402, {
        type: 'card_error',
        code: 'refund_declined',
        message: 'The refund was declined by the card issuer.',
      });
    }
    const refund = {
      id: `re_${randomId(24)}`,
      object: 'refund',
      amount,
      currency: intent.currency,
      charge: charge.id,
      payment_intent: id,
      status: 'succeeded',
      reason: null,
      created: now(),
      metadata: typeof params.metadata === 'object' ? params.metadata : {},
      // Stripe's refund to a card: the acquirer reference number the network gives it.
      destination_details: {
        type: 'card',
        card: {
          reference: randomDigits(23),
          reference_status: 'available',
          reference_type: 'acquirer_reference_number',
          type: 'refund',
        },
      },
    };
    refunds.set(refund.id, refund);
    intentRefunds.set(id, [...(intentRefunds.get(id) ?? []), refund.id]);
    const refunded = Number(charge.amount_refunded) + amount;
    const updatedCharge = {
      ...charge,
      amount_refunded: refunded,
      refunded: refunded >= Number(charge.amount),
    };
    charges.set(String(charge.id), updatedCharge);
    context.stats.refundsCreated.gateway_a += 1;
    // As API versions since 2022-11-15: the charge without its refunds, and the refund on its own.
    context.events.stripe('charge.refunded', updatedCharge);
    context.events.stripe('refund.created', refund);
    return ok(refund);
  }

  function listRefunds(query: URLSearchParams): ApiResponse {
    const id = query.get('payment_intent') ?? '';
    const data = (intentRefunds.get(id) ?? []).flatMap((refundId) => {
      const refund = refunds.get(refundId);
      return refund ? [refund] : [];
    });
    return ok({ object: 'list', data: data.toReversed(), has_more: false, url: '/v1/refunds' });
  }

  function createIntent(params: FormObject, decline: boolean): ApiResponse {
    const { amount, currency, metadata } = params;
    if (typeof amount !== 'string' || !/^[1-9]\d{0,11}$/.test(amount)) {
      return invalid('amount', 'Invalid positive integer', 'parameter_invalid_integer');
    }
    if (typeof currency !== 'string' || !/^[a-z]{3}$/.test(currency)) {
      return invalid('currency', 'Invalid currency: use a lower-case three-letter ISO code');
    }
    const metadataProblem = checkMetadata(metadata);
    if (metadataProblem) return metadataProblem;
    if (decline) {
      return stripeError(402, {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'generic_decline',
        message: 'Your card was declined.',
      });
    }
    const id = `pi_${randomId(24)}`;
    const intent = {
      id,
      object: 'payment_intent',
      amount: Number(amount),
      amount_received: 0,
      currency,
      client_secret: `${id}_secret_${randomId(25)}`,
      status: 'requires_payment_method',
      capture_method: 'automatic',
      payment_method_types: ['card'],
      created: Math.floor(context.clock.now().getTime() / 1000),
      livemode: false,
      metadata: typeof metadata === 'object' ? metadata : {},
    };
    intents.set(id, intent);
    context.stats.paymentsCreated.gateway_a += 1;
    // `confirm=true` with a payment method: confirmed at once, as Stripe does server-side.
    if (params.confirm === 'true') return confirmIntent(id, params, false);
    return { status: 200, body: intent, headers: { 'Request-Id': `req_${randomId(14)}` } };
  }

  return {
    prefix: '/v1/',
    routes: [
      {
        method: 'POST',
        pattern: /^\/v1\/payment_intents$/,
        operation: 'stripe.paymentIntents.create',
        handle: ({ headers, body, decline }) => {
          const params = parseForm(body);
          const key = headers['idempotency-key'];
          if (typeof key !== 'string' || key.length === 0) return createIntent(params, decline);
          const mismatch = () =>
            stripeError(400, {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with (key '${key}').`,
            });
          return idempotency.run(key, canonicalJson(params), mismatch, () => createIntent(params, decline));
        },
      },
      {
        method: 'POST',
        pattern: /^\/v1\/payment_intents\/([^/]+)\/confirm$/,
        operation: 'stripe.paymentIntents.confirm',
        handle: (request) => {
          const params = parseForm(request.body);
          return idempotent(request, params, () =>
            confirmIntent(request.params[0] ?? '', params, request.decline),
          );
        },
      },
      {
        method: 'POST',
        pattern: /^\/v1\/payment_intents\/([^/]+)\/cancel$/,
        operation: 'stripe.paymentIntents.cancel',
        handle: (request) =>
          idempotent(request, parseForm(request.body), () => cancelIntent(request.params[0] ?? '')),
      },
      {
        method: 'POST',
        pattern: /^\/v1\/refunds$/,
        operation: 'stripe.refunds.create',
        handle: (request) => {
          const params = parseForm(request.body);
          return idempotent(request, params, () => createRefund(params, request.decline));
        },
      },
      {
        method: 'GET',
        pattern: /^\/v1\/refunds$/,
        operation: 'stripe.refunds.list',
        handle: (request) => listRefunds(request.query),
      },
      {
        method: 'GET',
        pattern: /^\/v1\/payment_intents\/([^/]+)$/,
        operation: 'stripe.paymentIntents.retrieve',
        handle: ({ params: [id = ''], query }) => {
          const intent = intents.get(id);
          // `expand[]=latest_charge`, as the stripe SDK sends `expand: ['latest_charge']`.
          const expand = [...query].some(
            ([key, value]) => key.startsWith('expand') && value === 'latest_charge',
          );
          const charge = expand ? charges.get(String(intent?.latest_charge ?? '')) : undefined;
          if (intent)
            return {
              status: 200,
              body: charge ? { ...intent, latest_charge: charge } : intent,
              headers: { 'Request-Id': `req_${randomId(14)}` },
            };
          return stripeError(404, {
            type: 'invalid_request_error',
            code: 'resource_missing',
            param: 'intent',
            message: `No such payment_intent: '${id}'`,
          });
        },
      },
    ],
    unauthorised: (headers) =>
      bearerToken(headers)?.startsWith('sk_')
        ? null
        : stripeError(401, { type: 'invalid_request_error', message: 'Invalid API Key provided' }),
    failure: (status) =>
      stripeError(status, {
        type: status === 429 ? 'invalid_request_error' : 'api_error',
        ...(status === 429 ? { code: 'rate_limit' } : {}),
        message: `Sandbox fault: simulated ${status}`,
      }),
    notFound: () => stripeError(404, { type: 'invalid_request_error', message: 'Unrecognized request URL' }),
    refund: (paymentId, amount) =>
      createRefund(
        { payment_intent: paymentId, ...(amount === undefined ? {} : { amount: String(amount) }) },
        false,
      ),
  };
}
