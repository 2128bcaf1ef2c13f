import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { paymentGatewayKind } from '../../../lib/kernel/fields.js';
import {
  gatewayEventBody,
  gatewayEventDocumented,
  gatewayEventResponse,
} from '../../../lib/payments/gateway-events.js';

/**
 * The providers' own webhooks. No API key: each is verified with its provider's SDK instead, and
 * only verified events spend the gateway's own budget (a provider posts from a few shared
 * addresses); a request that fails verification is counted against its source address, and never
 * audited. At the edge, infra/edge-waf.ts limits each source address on this route.
 */
export const gatewayEventsRoute = defineRoute({
  name: 'gateway-events',
  method: 'POST',
  path: '/api/v1/gateways/{gateway}/events',
  entry: 'functions/payments/gateway-events/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: {
    apiKeys: 'read',
    rateLimits: 'readWrite',
    audit: 'write',
    payments: 'readWrite',
    receipts: 'readWrite',
    users: 'read',
  },
  escrow: 'wrap',
  cardTags: true,
  gateways: true,
  gatewayEvents: true,
  keylessBudget: {
    byParam: 'gateway',
    requestsPerMinute: 6_000,
    unverifiedPerSourcePerMinute: 60,
    edge: { ratePerSecond: 100, burst: 200 },
  },
  timeoutSeconds: 29,
  docs: {
    tag: 'payments',
    summary: "Receive a payment gateway's own events",
    description:
      'Where Stripe (gateway_a) and Square (gateway_b) send their webhooks: register this URL with each provider ' +
      "(docs/DEPLOY.md). Each event is verified with the provider's SDK: `Stripe-Signature` by " +
      "stripe.webhooks.constructEvent, `X-Square-HmacSha256-Signature` by the square SDK's WebhooksHelper over " +
      'the registered notification URL and the body; a missing or wrong signature, or an event older than 300 s, ' +
      'is 401 invalid_signature and changes nothing. Followed: payment_intent.succeeded, .payment_failed and ' +
      '.canceled, charge.refunded, refund.created, .updated and .failed (gateway_a); payment.created and ' +
      '.updated, refund.created and .updated (gateway_b). Each event is applied once however often it comes, and ' +
      'in whatever order events come the payment ends in the same state: a status only moves forward, refunds ' +
      'are counted by their own ids. Events about payments this service did not make are acknowledged and ' +
      "ignored. A refund made in the provider's dashboard is recorded like one made through the service, with " +
      'its refund receipt. The signature is checked before anything else: only verified events count against ' +
      "the gateway's budget (6,000 a minute), so strangers cannot crowd the providers' events out; requests " +
      'that fail verification are limited per source address (60 a minute, then 429) and written nowhere. ' +
      'An event dated more than 300 s in the future is refused like a stale one. A refund whose currency is ' +
      "not the payment's is refused (400), audited and alarmed.",
    details:
      "No API key: the payment gateways' own webhooks, each verified with the provider's SDK. Register " +
      'this URL with Stripe (for `gateway_a`) and Square (for `gateway_b`), as DEPLOY.md ' +
      '(docs/DEPLOY.md) says; the local gateway sandbox posts here by itself.\n\n' +
      '- gateway_a: the `Stripe-Signature` header, checked by `stripe.webhooks.constructEvent` against ' +
      "the endpoint's signing secret (`whsec_…`), with Stripe's 300 s tolerance. Followed: " +
      '`payment_intent.succeeded`, `payment_intent.payment_failed`, `payment_intent.canceled`, ' +
      "`charge.refunded` (the payment's refunds are then read from Stripe, as API versions since " +
      '2022-11-15 leave them out of the charge), `refund.created`, `refund.updated`, ' +
      '`refund.failed`.\n- gateway_b: the `X-Square-HmacSha256-Signature` header, checked by the square ' +
      "SDK's `WebhooksHelper.verifySignature` over the notification URL the subscription was " +
      "registered with and the body. Square's signature carries no time, so an event is stale by its " +
      '`created_at`: older than 24 hours and 5 minutes (Square re-sends the same body for up to 24 ' +
      'hours while an endpoint fails; a shorter window would refuse its own redeliveries after an ' +
      'outage). Followed: `payment.created`, `payment.updated`, `refund.created`, `refund.updated`.\n- ' +
      'A missing or wrong signature, a stale event or one dated more than 300 s ahead is `401 ' +
      'invalid_signature` (one message for all), changes nothing and is written nowhere; past 60 such ' +
      'requests a minute from one source address, `429`.\n- `200 { received: true, eventId, type, outcome }`: `applied` (it ' +
      'changed a payment or recorded a refund), `unchanged` (known already, or older than what is ' +
      'known), `ignored` (a payment this service did not make, or a type it does not follow), ' +
      '`duplicate` (this event id was applied before).\n- `409 CONFLICT` with `details.retryable: true` ' +
      'when the event is about a refund this service is still asking the gateway for (Square keeps no ' +
      "id of ours on a refund, so the merchant's request is what gets recorded): the provider delivers " +
      "it again.\n- A refund in another currency than its payment's is `400 INVALID_REQUEST`, audited " +
      'and alarmed.\n- Verified events are counted per gateway, 6,000 a minute, not per sender (a provider posts from a few ' +
      'shared addresses); throttled at 100 a second (burst 200) at the edge when deployed.',
  },
  request: {
    params: lazySchema(() => z.object({ gateway: paymentGatewayKind })),
    headers: lazySchema(() =>
      z.object({
        'Stripe-Signature': z.string().max(8192).optional().meta({ description: 'gateway_a: t=…,v1=…' }),
        'X-Square-HmacSha256-Signature': z
          .string()
          .max(512)
          .optional()
          .meta({ description: 'gateway_b: base64 HMAC-SHA256 of notification URL + body.' }),
      }),
    ),
    body: {
      description: "The provider's event, exactly as it signed it.",
      schema: gatewayEventBody,
      documented: gatewayEventDocumented,
      raw: true,
    },
  },
  response: { description: 'Verified and handled.', schema: gatewayEventResponse, enveloped: true },
  errors: {
    400: {
      description:
        "An unknown gateway, or a gateway not configured here; or a refund in another currency than its payment's.",
    },
    401: {
      description:
        'The signature is missing or wrong, or the event is older than 300 s or dated more than 300 s ahead: ' +
        'nothing changed, nothing written.',
      codes: ['invalid_signature'],
    },
    409: {
      description:
        'The event is about a refund this service is still asking the gateway for, or the payment is changing ' +
        'under many requests at once (`details.retryable: true`): the provider delivers it again.',
      codes: ['CONFLICT'],
    },
    502: {
      description: 'The gateway could not be reached to read the refunds the event is about.',
      codes: ['GATEWAY_ERROR'],
    },
  },
});
