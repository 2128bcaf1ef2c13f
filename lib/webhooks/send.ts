import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import { epochSeconds, type Clock } from '../kernel/clock.js';
import type { UserRepository } from '../db/users.js';
import {
  dueBucketOf,
  type DeliveryAttempt,
  type DeliveryKey,
  type DeliveryRecord,
  type WebhookDeliveryRepository,
} from '../db/webhook-deliveries.js';
import { signingSecrets, type WebhookRecord, type WebhookRepository } from '../db/webhooks.js';
import type { Logger } from '../kernel/log.js';
import type { Telemetry } from '../kernel/telemetry.js';
import type { PostResult, WebhookTransport } from './transport.js';
import type { WebhookUrlGuard } from './url-guard.js';

/** What delivering needs: the stream dispatcher, the sweeper and the retry route all build this. */
export interface DeliveryDeps {
  clock: Clock;
  logger: Logger;
  telemetry: Telemetry;
  webhooks: Pick<WebhookRepository, 'get' | 'listForClient'>;
  deliveries: WebhookDeliveryRepository;
  users: Pick<UserRepository, 'getById'>;
  transport: WebhookTransport;
  /** The URL guard, again at every attempt. */
  checkUrl: WebhookUrlGuard;
}

/**
 * Waits after a failed attempt of a schedule, by the attempt's number in it: immediately, 5 s, 5 min,
 * 30 min, 2 h, 5 h, 10 h, 10 h, eight attempts over 27 h 35 min (the issue asks for at least 24 h).
 */
export const retryDelaysMs: readonly number[] = [
  5_000,
  5 * 60_000,
  30 * 60_000,
  2 * 3_600_000,
  5 * 3_600_000,
  10 * 3_600_000,
  10 * 3_600_000,
];
export const MAX_ATTEMPTS = retryDelaysMs.length + 1;
/** A 2xx must arrive within this. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/**
 * A claimed attempt is due again after this, should its sender die mid-attempt. Longer than the
 * timeout plus the sweeper function's own, so a live attempt is never taken over.
 */
export const CLAIM_LEASE_MS = 2 * 60_000;
const RETENTION_SECONDS = 30 * 24 * 3_600;

/** Standard Webhooks headers; during a rotation's overlap one signature per secret, space separated. */
export function signedHeaders(
  webhook: WebhookRecord,
  deliveryId: string,
  payload: string,
  at: Date,
): Record<string, string> {
  const signatures = signingSecrets(webhook, at).map((secret) =>
    new Webhook(secret).sign(deliveryId, at, payload),
  );
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(epochSeconds(at)),
    'webhook-signature': signatures.join(' '),
  };
}

type Outcome = { result: PostResult | { error: string }; final: boolean };

async function post(deps: DeliveryDeps, delivery: DeliveryRecord, at: Date): Promise<Outcome> {
  const webhook = await deps.webhooks.get(delivery.webhookId);
  // Deleted, or somehow another client's now: nothing is sent and nothing will be.
  if (!webhook || webhook.clientId !== delivery.clientId)
    return { result: { error: 'webhook_deleted' }, final: true };
  // Again at every attempt: the name may point somewhere else than when the webhook was registered.
  const check = await deps.checkUrl(webhook.url);
  if (!check.ok) {
    // A name that does not resolve may come back; one that resolves into our network is refused for good.
    const transient = /does not resolve/.test(check.reason);
    return { result: { error: `url_refused: ${check.reason}` }, final: !transient };
  }
  const result = await deps.transport.post({
    url: check.url,
    address: check.addresses[0] as string,
    headers: signedHeaders(webhook, delivery.deliveryId, delivery.payload, at),
    body: delivery.payload,
    timeoutMs: ATTEMPT_TIMEOUT_MS,
  });
  return { result, final: false };
}

/**
 * One attempt of a pending delivery, if this caller wins its claim (null otherwise, or when a later
 * claim overtook this one): sent, then recorded as succeeded, due again by the schedule, or failed.
 * `dueBy` (the sweeper) also requires the attempt to be due.
 */
export async function attemptDelivery(
  deps: DeliveryDeps,
  delivery: DeliveryKey & { attemptCount: number },
  options: { dueBy?: Date } = {},
): Promise<DeliveryRecord | null> {
  const at = deps.clock.now();
  const claimed = await deps.deliveries.claim(delivery, delivery.attemptCount, leaseFrom(at), options.dueBy);
  return claimed ? attemptClaimed(deps, claimed, at) : null;
}

/** Until when an attempt that starts at `at` holds its claim. */
export const leaseFrom = (at: Date): Date => new Date(at.getTime() + CLAIM_LEASE_MS);

/** What one attempt came to: the attempt as listed, and the delivery's state after it. */
type Attempted = {
  attempt: DeliveryAttempt;
  outcome: { status: 'pending'; nextAttemptAt: Date } | { status: 'succeeded' | 'failed' };
};

/**
 * Makes attempt number `attemptCount` of a delivery at `at` (the URL checked again, the body signed)
 * and answers it with what follows by the schedule: succeeded, due again, or failed.
 */
async function attemptOnce(deps: DeliveryDeps, delivery: DeliveryRecord, at: Date): Promise<Attempted> {
  const started = performance.now();
  const { result, final } = await post(deps, delivery, at);
  const attempt: DeliveryAttempt = {
    at: at.toISOString(),
    durationMs: Math.round(performance.now() - started),
    ...('status' in result ? { httpStatus: result.status } : { error: result.error }),
  };
  const succeeded = 'status' in result && result.status >= 200 && result.status < 300;
  const step = delivery.attemptCount - delivery.scheduledFrom;
  const delay = retryDelaysMs[step - 1];
  const outcome = succeeded
    ? ({ status: 'succeeded' } as const)
    : final || delay === undefined
      ? ({ status: 'failed' } as const)
      : ({ status: 'pending', nextAttemptAt: new Date(at.getTime() + delay) } as const);
  return { attempt, outcome };
}

/** Makes and records the attempt a claim (or a manual retry's restart) has taken, made at `at`. */
export async function attemptClaimed(
  deps: DeliveryDeps,
  claimed: DeliveryRecord,
  at: Date,
): Promise<DeliveryRecord | null> {
  const { attempt, outcome } = await attemptOnce(deps, claimed, at);
  const recorded = await deps.deliveries.recordAttempt(
    claimed,
    claimed.attemptCount,
    attempt,
    outcome,
    epochSeconds(at) + RETENTION_SECONDS,
  );
  reportFailed(deps, recorded, attempt);
  return recorded;
}

/**
 * The first attempt of a delivery that has no record yet (lib/webhooks/queue.ts: its queued message
 * carries it), made by the one consumer its message group has, then its record written once, with
 * the outcome: succeeded, due for its retry, or failed. Null when the record exists by then (a
 * message for it handled before): nothing is sent.
 */
export async function attemptFirst(
  deps: DeliveryDeps,
  delivery: DeliveryRecord,
): Promise<DeliveryRecord | null> {
  const at = deps.clock.now();
  const made = { ...delivery, attemptCount: 1, scheduledFrom: 0 };
  const { attempt, outcome } = await attemptOnce(deps, made, at);
  const recorded = withOutcome(made, attempt, outcome, epochSeconds(at) + RETENTION_SECONDS);
  const created = await deps.deliveries.create(recorded);
  if (!created) return null;
  reportFailed(deps, recorded, attempt);
  return recorded;
}

/** A delivery's record after one more attempt: in `by-due` only while pending. */
function withOutcome(
  delivery: DeliveryRecord,
  attempt: DeliveryAttempt,
  outcome: Attempted['outcome'],
  ttl: number,
): DeliveryRecord {
  const { nextAttemptAt: _due, dueBucket: _bucket, leaseUntil: _lease, ...rest } = delivery;
  return {
    ...rest,
    status: outcome.status,
    attempts: [...delivery.attempts, attempt],
    ttl,
    ...(outcome.status === 'pending'
      ? { nextAttemptAt: outcome.nextAttemptAt.toISOString(), dueBucket: dueBucketOf(delivery.deliveryId) }
      : {}),
  };
}

function reportFailed(deps: DeliveryDeps, recorded: DeliveryRecord | null, attempt: DeliveryAttempt): void {
  if (recorded?.status === 'failed') {
    deps.telemetry.count('WebhookDeliveriesFailed');
    deps.logger.warn('webhook delivery failed', {
      webhookId: recorded.webhookId,
      deliveryId: recorded.deliveryId,
      attempts: recorded.attemptCount,
      lastError: attempt.error ?? `http ${attempt.httpStatus}`,
    });
  }
}
