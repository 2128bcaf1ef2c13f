import { bearerToken, canonicalJson, IdempotencyStore, randomId } from './api.js';
import type { ApiResponse, ProviderApi, SandboxContext } from './api.js';

/** The slice of Stripe's v1 wire API that lib/gateways/stripe.ts uses: form-encoded PaymentIntents. */

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

export function stripeApi(context: SandboxContext): ProviderApi {
  const intents = context.journal.store<Record<string, unknown>>('stripe.paymentIntents');
  const idempotency = new IdempotencyStore(context.journal.store('stripe.idempotency'));

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
        method: 'GET',
        pattern: /^\/v1\/payment_intents\/([^/]+)$/,
        operation: 'stripe.paymentIntents.retrieve',
        handle: ({ params: [id = ''] }) => {
          const intent = intents.get(id);
          if (intent) return { status: 200, body: intent, headers: { 'Request-Id': `req_${randomId(14)}` } };
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
  };
}
