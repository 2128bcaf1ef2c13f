import * as z from 'zod';
import type { AppDeps } from '../app/deps.js';
import type { GatewayKind } from '../gateways/port.js';
import { MINUTE_WINDOW_SECONDS, rateBuckets, type RateLimitState } from '../db/rate-limits.js';
import { RateLimitExceededError } from '../kernel/errors.js';
import { InvalidSignatureError } from '../gateways/vocabulary.js';
import type { RouteDeclaration, SameType } from '../kernel/route.js';
import { configuredGateway } from './create.js';
import { applyPaymentState, recordRefund, type Applied, type LifecycleDeps } from './lifecycle.js';

/** How long an applied event's id is kept: longer than either provider goes on redelivering one. */
export const EVENT_RECORD_SECONDS = 7 * 86_400;

export const gatewayEventOutcomes = ['applied', 'unchanged', 'ignored', 'duplicate'] as const;

export interface GatewayEventResult {
  received: true;
  eventId: string;
  type: string;
  outcome: (typeof gatewayEventOutcomes)[number];
}

export const gatewayEventResponse = z
  .strictObject({
    received: z.literal(true),
    eventId: z.string(),
    type: z.string().meta({ description: "The provider's event type." }),
    outcome: z.enum(gatewayEventOutcomes).meta({
      description:
        '`applied`: it changed a payment or recorded a refund; `unchanged`: what it says was known already (or ' +
        'is older than what is known); `ignored`: not about a payment this service made, or a type it does not ' +
        'follow; `duplicate`: this event was applied before.',
    }),
  })
  .meta({
    id: 'GatewayEventReceipt',
    description: 'The event was verified and handled; nothing more to send.',
  });

export const gatewayEventTypeMatches: SameType<
  z.output<typeof gatewayEventResponse>,
  GatewayEventResult
> = true;

/** The provider's event as it arrives: the body untouched, for its signature. */
export const gatewayEventBody = z.string().max(128 * 1024);
export const gatewayEventDocumented = z
  .object({})
  .catchall(z.unknown())
  .meta({
    id: 'GatewayEvent',
    description:
      "The provider's own webhook, byte for byte as it signed it: a Stripe Event (gateway_a) or a Square event " +
      'notification (gateway_b).',
  });

const stronger = (a: Applied, b: Applied): Applied =>
  a === 'applied' || b === 'applied' ? 'applied' : a === 'unchanged' || b === 'unchanged' ? 'unchanged' : a;

/**
 * POST /gateways/{gateway}/events: verifies the provider's event with its SDK (lib/gateways) before
 * anything else, then spends the gateway's budget and applies what it says once: an event id already
 * applied changes nothing, and every fact only moves a payment or a refund forward, so redeliveries
 * and any order of arrival end in the same state. Events about payments the service did not make are
 * acknowledged and ignored. A request that fails verification spends only its source address's
 * allowance and is written nowhere (a metric counts it): strangers cannot crowd a provider out, nor
 * fill the audit.
 */
export async function receiveGatewayEvent(
  deps: LifecycleDeps & Pick<AppDeps, 'gateways' | 'rateLimiter'>,
  input: {
    gateway: GatewayKind;
    rawBody: string;
    headers: Record<string, string | undefined>;
    requestId: string;
    sourceIp: string;
    budget: NonNullable<RouteDeclaration['keylessBudget']>;
    /** Told the window the request was counted in: what its X-RateLimit-* headers describe. */
    counted: (state: RateLimitState) => void;
  },
): Promise<GatewayEventResult> {
  const { gateway, requestId, budget } = input;
  const provider = await configuredGateway(deps, gateway);
  const now = deps.clock.now();
  const spend = async (bucket: string, limit: number) => {
    const state = await deps.rateLimiter.hit(bucket, limit, MINUTE_WINDOW_SECONDS, now);
    input.counted(state);
    if (!state.allowed) {
      deps.telemetry.count('RateLimitRefusals', { group: 'anonymous' });
      throw new RateLimitExceededError(state.resetAt - now.getTime() / 1000);
    }
  };
  let event;
  try {
    event = await provider.verifyEvent({ rawBody: input.rawBody, headers: input.headers, receivedAt: now });
  } catch (error) {
    if (error instanceof InvalidSignatureError) {
      deps.telemetry.count('GatewayEventsRefused', { gateway });
      await spend(
        rateBuckets.unverified('gateway-events', input.sourceIp),
        budget.unverifiedPerSourcePerMinute,
      );
    }
    throw error;
  }
  await spend(rateBuckets.route('gateway-events', gateway), budget.requestsPerMinute);
  const answer = (outcome: GatewayEventResult['outcome']): GatewayEventResult => ({
    received: true,
    eventId: event.eventId,
    type: event.type,
    outcome,
  });
  if (await deps.repos.payments.hasEvent(gateway, event.eventId, now)) return answer('duplicate');

  let result: Applied = 'unknown-payment';
  for (const fact of event.facts) {
    if (fact.kind === 'payment') {
      result = stronger(
        result,
        await applyPaymentState(deps, { gateway, paymentId: fact.paymentId, state: fact.state, requestId }),
      );
      continue;
    }
    const refunds =
      fact.kind === 'refund'
        ? [fact.refund]
        : // The event does not list them: read the payment's refunds, for a payment of ours only.
          (await deps.repos.payments.getPayment(gateway, fact.paymentId))
          ? await provider.listRefunds(fact.paymentId)
          : [];
    for (const refund of refunds) {
      const recorded = await recordRefund(deps, { gateway, refund, source: 'gateway', requestId });
      result = stronger(result, !recorded ? 'unknown-payment' : recorded.changed ? 'applied' : 'unchanged');
    }
  }
  if (result === 'unknown-payment') return answer('ignored');
  // Recorded once it has been applied: a failure before this leaves the provider to deliver it again.
  // An event about no payment of ours is not: should the payment's record appear later (its create
  // still running), a redelivery is then applied rather than taken for a duplicate.
  await deps.repos.payments.recordEvent(gateway, event.eventId, now, EVENT_RECORD_SECONDS);
  return answer(result);
}
