/**
 * TEST DOUBLE — not a payment gateway. A local stand-in for the parts of the Stripe and Square HTTP
 * APIs that lib/gateways uses, so the real SDKs run end to end with no network, plus fault injection
 * (errors, hangs before or after a payment is committed, declines) for tests and the local stack.
 * Point the service at it with GATEWAY_SANDBOX_URL. Never import it from lib/ or functions/.
 *
 * Control endpoints, for a sandbox running in another process:
 *   POST /__sandbox/faults  body: a FaultSpec or an array of them
 *   GET  /__sandbox/stats   requests per operation, payments, orders and refunds created
 *   POST /__sandbox/reset   clears faults and counters (stored payments stay, so earlier receipts resolve)
 *   POST /__sandbox/{gateway_a|gateway_b}/payments/{paymentId}/refunds  body: { amount? }
 *        a refund made in the provider's dashboard: the whole remainder without an amount
 *   GET  /__sandbox/events  the provider events sent to the service, and whether each was delivered
 *
 * After each change it makes (a confirmed, declined or canceled intent, a payment, a refund), the
 * sandbox sends the provider's signed event to the service's events URL, as the providers do
 * (./events.ts); `deliverEventsTo` says where the service listens.
 *
 * With `dataDir`, payments, orders and idempotency results are kept in `gateway-sandbox.jsonl` there
 * and read back on the next start, so receipts attached to earlier payments still resolve after a
 * restart of `npm start`; without it they live in memory only.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as z from 'zod';
import { systemClock, type Clock } from '../../lib/kernel/clock.js';
import type { ApiResponse, ProviderApi, SandboxContext } from './api.js';
import { EventOutbox, type EventGateway, type WebhookSecrets } from './events.js';
import {
  emptyStats,
  faultSpecSchema,
  FaultRegistry,
  resetStats,
  type SandboxAttempt,
  type SandboxStats,
} from './faults.js';
import { fileJournal, memoryJournal } from './journal.js';
import { newWebhookSecrets } from '../gateway-webhook-secrets.js';
import { squareApi } from './square-api.js';
import { stripeApi } from './stripe-api.js';

export type { FaultSpec, SandboxAttempt, SandboxOperation, SandboxStats } from './faults.js';
export type { SentEvent, WebhookSecrets } from './events.js';
export { eventsPath } from './events.js';
export { DECLINING_PAYMENT_METHODS } from './stripe-api.js';
export { APPROVED_NONCE, DECLINED_NONCE } from './square-api.js';

export interface GatewaySandboxOptions {
  /** 0 or omitted: any free port. */
  port?: number;
  clock?: Clock;
  /** Keep payments in this folder across restarts; omitted: in memory only. */
  dataDir?: string;
  /** What the providers sign their webhooks with (the service verifies with the same); new ones when omitted. */
  webhookSecrets?: WebhookSecrets;
}

export const SANDBOX_JOURNAL_FILE = 'gateway-sandbox.jsonl';

export interface GatewaySandbox {
  url: string;
  faults: FaultRegistry;
  /** Live counters; `reset()` zeroes them in place. */
  stats: SandboxStats;
  /**
   * Every request that reached an operation, in order, with its idempotency key and the fault it met;
   * `reset()` empties it in place. A retry shows here whether or not its client waited for the answer.
   */
  attempts: readonly SandboxAttempt[];
  /**
   * Resolves once `count` requests have met a `hang` fault since the last `reset()` (at once if they
   * have): the moment a test times the held request out by moving its clock.
   */
  held(count?: number): Promise<void>;
  /** The provider events sent to the service (or waiting to be). */
  events: EventOutbox;
  webhookSecrets: WebhookSecrets;
  /** Where the service listens (its base URL): from now on, events are posted there. */
  deliverEventsTo(baseUrl: string): void;
  /** A refund made in the provider's dashboard; without an amount, all that is left. */
  dashboardRefund(
    gateway: EventGateway,
    paymentId: string,
    amount?: number,
  ): { status: number; body: unknown };
  reset(): void;
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 1024 * 1024;

/** Stripe sends the key as a header, Square in the JSON body. */
function idempotencyKeyOf(headers: IncomingMessage['headers'], body: string): string | null {
  const header = headers['idempotency-key'];
  if (typeof header === 'string') return header;
  try {
    const key = (JSON.parse(body) as { idempotency_key?: unknown } | null)?.idempotency_key;
    return typeof key === 'string' ? key : null;
  } catch {
    return null;
  }
}

function send(res: ServerResponse, { status, body, headers = {} }: ApiResponse): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export async function startGatewaySandbox(options: GatewaySandboxOptions = {}): Promise<GatewaySandbox> {
  const journal = options.dataDir
    ? fileJournal(join(options.dataDir, SANDBOX_JOURNAL_FILE))
    : memoryJournal();
  if (journal.skipped > 0) {
    console.warn(`gateway sandbox: skipped ${journal.skipped} unreadable line(s) of its journal`);
  }
  const clock = options.clock ?? systemClock;
  const webhookSecrets = options.webhookSecrets ?? newWebhookSecrets();
  const events = new EventOutbox(clock, webhookSecrets);
  const context: SandboxContext = { clock, stats: emptyStats(), journal, events };
  const faults = new FaultRegistry();
  const stripe = stripeApi(context);
  const square = squareApi(context);
  const providers: ProviderApi[] = [stripe, square];
  const dashboards: Record<EventGateway, typeof stripe | typeof square> = {
    gateway_a: stripe,
    gateway_b: square,
  };
  const held = new Set<NodeJS.Timeout>();
  const attempts: SandboxAttempt[] = [];
  const heldWaiters = new Set<{ count: number; resolve: () => void }>();
  const heldSoFar = () => attempts.filter((attempt) => attempt.fault === 'hang').length;
  const wakeHeldWaiters = () => {
    const count = heldSoFar();
    for (const waiter of heldWaiters) {
      if (waiter.count > count) continue;
      heldWaiters.delete(waiter);
      waiter.resolve();
    }
  };

  const reset = () => {
    faults.clear();
    resetStats(context.stats);
    attempts.length = 0;
  };

  /** Keeps the request open with no answer, then drops the connection, like a response lost in transit. */
  function hold(res: ServerResponse, ms: number): void {
    const timer = setTimeout(() => {
      held.delete(timer);
      res.destroy();
    }, ms);
    held.add(timer);
    res.on('close', () => {
      clearTimeout(timer);
      held.delete(timer);
    });
    wakeHeldWaiters();
  }

  function control(method: string, path: string, body: string): ApiResponse {
    if (method === 'GET' && path === '/__sandbox/stats') return { status: 200, body: context.stats };
    if (method === 'GET' && path === '/__sandbox/events') {
      return {
        status: 200,
        body: {
          events: events.sent.map(({ gateway, type, eventId, attempts, lastStatus, delivered }) => ({
            gateway,
            type,
            eventId,
            attempts,
            lastStatus: lastStatus ?? null,
            delivered,
          })),
        },
      };
    }
    const refund = /^\/__sandbox\/(gateway_a|gateway_b)\/payments\/([^/]+)\/refunds$/.exec(path);
    if (method === 'POST' && refund) {
      let parsed: unknown = {};
      try {
        parsed = body.trim() === '' ? {} : JSON.parse(body);
      } catch {
        return { status: 400, body: { error: 'Body must be JSON' } };
      }
      const amount = z.object({ amount: z.number().int().min(1).optional() }).safeParse(parsed);
      if (!amount.success) return { status: 400, body: { error: z.prettifyError(amount.error) } };
      const gateway = refund[1] as EventGateway;
      return dashboards[gateway].refund(decodeURIComponent(refund[2] ?? ''), amount.data.amount);
    }
    if (method === 'GET' && path === '/__sandbox/faults') {
      return { status: 200, body: { faults: faults.list() } };
    }
    if (method === 'POST' && path === '/__sandbox/reset') {
      reset();
      return { status: 200, body: { reset: true } };
    }
    if (method === 'POST' && path === '/__sandbox/faults') {
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return { status: 400, body: { error: 'Body must be JSON' } };
      }
      const specs = z.array(faultSpecSchema).safeParse(Array.isArray(parsed) ? parsed : [parsed]);
      if (!specs.success) return { status: 400, body: { error: z.prettifyError(specs.error) } };
      specs.data.forEach((spec) => faults.add(spec));
      return { status: 200, body: { faults: faults.list() } };
    }
    return { status: 404, body: { error: 'Unknown sandbox control endpoint' } };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://sandbox');
    const path = url.pathname;
    const body = await readBody(req);
    if (body === null) return send(res, { status: 413, body: { error: 'Body too large' } });
    if (path.startsWith('/__sandbox/')) return send(res, control(method, path, body));
    const provider = providers.find((candidate) => path.startsWith(candidate.prefix));
    if (!provider) return send(res, { status: 404, body: { error: 'Not a simulated gateway path' } });
    let params: string[] = [];
    const route = provider.routes.find((candidate) => {
      const match = candidate.method === method ? candidate.pattern.exec(path) : null;
      params = match ? match.slice(1).map((part) => decodeURIComponent(part)) : [];
      return match !== null;
    });
    if (!route) return send(res, provider.notFound());
    context.stats.requests[route.operation] += 1;
    const unauthorised = provider.unauthorised(req.headers);
    const fault = unauthorised ? undefined : faults.take(route.operation);
    attempts.push({
      operation: route.operation,
      idempotencyKey: idempotencyKeyOf(req.headers, body),
      fault: fault?.kind ?? null,
    });
    if (unauthorised) return send(res, unauthorised);
    if (fault?.kind === 'status') return send(res, provider.failure(fault.status));
    if (fault?.kind === 'hang' && fault.when === 'before-commit') return hold(res, fault.ms);
    const response = route.handle({
      headers: req.headers,
      body,
      params,
      query: url.searchParams,
      decline: fault?.kind === 'decline',
    });
    if (fault?.kind === 'hang') return hold(res, fault.ms);
    send(res, response);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      console.error('gateway sandbox: request failed', error);
      if (!res.headersSent) send(res, { status: 500, body: { error: 'Sandbox error' } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  }).catch((error: unknown) => {
    journal.close();
    throw error;
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    faults,
    stats: context.stats,
    attempts,
    held: (count = 1) =>
      new Promise<void>((resolve) => {
        heldWaiters.add({ count, resolve });
        wakeHeldWaiters();
      }),
    events,
    webhookSecrets,
    deliverEventsTo: (baseUrl) => events.deliverTo(baseUrl),
    dashboardRefund: (gateway, paymentId, amount) => dashboards[gateway].refund(paymentId, amount),
    reset,
    async stop() {
      events.stop();
      held.forEach((timer) => clearTimeout(timer));
      held.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
      journal.close();
    },
  };
}
