import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import type { Clock } from '../../lib/kernel/clock.js';

/**
 * The providers' webhooks, as the providers send them: after each change the sandbox makes (a
 * confirmed or canceled intent, a payment, a refund), it builds the provider's event, signs it
 * exactly as the provider does and POSTs it to the service's events URL, retrying with back-off while
 * the service does not answer 2xx (as Stripe, Square and `stripe listen` do).
 *
 * - gateway_a: a Stripe Event, `Stripe-Signature: t=…,v1=…` over `t.payload` with the endpoint
 *   secret, made by the stripe SDK's own generateTestHeaderString, signed again at every attempt.
 * - gateway_b: a Square event notification, `x-square-hmacsha256-signature`: base64 HMAC-SHA256 of
 *   notification URL + body under the subscription's signature key; Square re-sends the same body.
 */
export interface WebhookSecrets {
  /** The Stripe endpoint's signing secret, `whsec_…`. */
  stripe: string;
  /** The Square subscription's signature key. */
  square: string;
}

export type EventGateway = 'gateway_a' | 'gateway_b';

export interface SentEvent {
  gateway: EventGateway;
  type: string;
  eventId: string;
  /** The body exactly as posted. */
  body: string;
  /** The headers of the latest attempt. */
  headers: Record<string, string>;
  attempts: number;
  /** The service's status at the latest attempt; undefined while none answered. */
  lastStatus?: number;
  delivered: boolean;
}

/** Seconds before each retry: quick at first (a service restarting), then a minute apart. */
const RETRY_SECONDS = [0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];
const MAX_ATTEMPTS = 60;

export const eventsPath = (gateway: EventGateway) => `/api/v1/gateways/${gateway}/events`;

export class EventOutbox {
  /** Every event made, in order: tests read them, and post one again to see it refused or ignored. */
  readonly sent: SentEvent[] = [];
  private target: string | undefined;
  private holding = false;
  private readonly held: SentEvent[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly secrets: WebhookSecrets,
  ) {}

  /** Where the service listens (its base URL): events made before this wait for it. */
  deliverTo(baseUrl: string): void {
    this.target = baseUrl.replace(/\/$/, '');
    for (const event of this.sent)
      if (!event.delivered && !this.held.includes(event)) this.schedule(event, 0);
  }

  /** The notification URL Square signs with the body: the service must be configured with the same. */
  notificationUrl(): string | undefined {
    return this.target ? `${this.target}${eventsPath('gateway_b')}` : undefined;
  }

  /** Keeps events from being sent until `release`, so a test can deliver them in another order. */
  hold(): void {
    this.holding = true;
  }

  /** Sends what was held, in the order made or the reverse, one after the other. */
  async release(order: 'made' | 'reverse' = 'made'): Promise<void> {
    this.holding = false;
    const batch = this.held.splice(0);
    if (order === 'reverse') batch.reverse();
    for (const event of batch) await this.attempt(event);
  }

  pending(): number {
    return this.sent.filter((event) => !event.delivered).length;
  }

  stop(): void {
    this.stopped = true;
    this.timers.forEach((timer) => clearTimeout(timer));
    this.timers.clear();
  }

  /** A Stripe Event around `object`. */
  stripe(type: string, object: Record<string, unknown>): void {
    const event = {
      id: `evt_${randomBytes(12).toString('hex')}`,
      object: 'event',
      api_version: Stripe.API_VERSION,
      created: Math.floor(this.clock.now().getTime() / 1000),
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
    };
    this.enqueue('gateway_a', type, event.id, JSON.stringify(event));
  }

  /** A Square event notification about a payment or a refund. */
  square(type: string, kind: 'payment' | 'refund', object: Record<string, unknown>): void {
    const eventId = randomUUID();
    const event = {
      merchant_id: 'MLSANDBOX',
      type,
      event_id: eventId,
      created_at: this.clock.now().toISOString(),
      data: { type: kind, id: object.id, object: { [kind]: object } },
    };
    this.enqueue('gateway_b', type, eventId, JSON.stringify(event));
  }

  private enqueue(gateway: EventGateway, type: string, eventId: string, body: string): void {
    const event: SentEvent = { gateway, type, eventId, body, headers: {}, attempts: 0, delivered: false };
    this.sent.push(event);
    if (this.holding) this.held.push(event);
    else this.schedule(event, 0);
  }

  /** The headers the provider would send with this body now. */
  signedHeaders(event: Pick<SentEvent, 'gateway' | 'body'>): Record<string, string> {
    if (event.gateway === 'gateway_a') {
      return {
        'Content-Type': 'application/json; charset=utf-8',
        'Stripe-Signature': Stripe.webhooks.generateTestHeaderString({
          payload: event.body,
          secret: this.secrets.stripe,
          timestamp: Math.floor(this.clock.now().getTime() / 1000),
        }),
      };
    }
    const url = this.notificationUrl() ?? '';
    return {
      'Content-Type': 'application/json',
      'X-Square-HmacSha256-Signature': createHmac('sha256', this.secrets.square)
        .update(url + event.body)
        .digest('base64'),
    };
  }

  private schedule(event: SentEvent, delaySeconds: number): void {
    if (this.stopped || !this.target) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.attempt(event);
    }, delaySeconds * 1000);
    this.timers.add(timer);
  }

  private async attempt(event: SentEvent): Promise<void> {
    if (this.stopped || event.delivered || !this.target) return;
    event.attempts += 1;
    event.headers = this.signedHeaders(event);
    try {
      const response = await fetch(`${this.target}${eventsPath(event.gateway)}`, {
        method: 'POST',
        headers: event.headers,
        body: event.body,
        signal: AbortSignal.timeout(30_000),
      });
      await response.arrayBuffer();
      event.lastStatus = response.status;
      event.delivered = response.ok;
    } catch {
      // The service is down or did not answer: the provider tries again later.
      event.lastStatus = undefined;
    }
    if (!event.delivered && event.attempts < MAX_ATTEMPTS) {
      this.schedule(event, RETRY_SECONDS[Math.min(event.attempts - 1, RETRY_SECONDS.length - 1)]!);
    }
  }
}
