import { randomBytes } from 'node:crypto';
import type { Caller } from '../api-keys/authenticator.js';
import type { Role } from '../kernel/route.js';
import { WebhookLimitReached, type WebhookEvent, type WebhookRecord } from '../db/webhooks.js';
import type { CoreDeps } from '../app/deps.js';
import { ForbiddenError, InvalidRequestError, NotFoundError } from '../kernel/errors.js';
import { WebhookLimitError } from './vocabulary.js';
import { base32 } from './base32.js';
import { webhookUrlGuardOf } from './url-guard.js';

/** Webhooks one API client may have at a time: each event fans out to all of them. */
export const maxWebhooksPerClient = 10;

/** The roles that may subscribe to each event: a client hears only about what it could read. */
export const eventRoles: Record<WebhookEvent, readonly Role[]> = {
  'receipt.available': ['issuer'],
  'receipt.escrowed': ['merchant'],
  // Its issuer and its merchant both read the receipt: each hears of its status.
  'receipt.updated': ['issuer', 'merchant'],
  // A merchant client's own signing keys or policy changed (lib/webhooks/announce.ts).
  'merchant.keys.changed': ['merchant'],
};

/** 'wh_' + 26 base32 characters: 130 random bits. */
export const newWebhookId = (): string => `wh_${base32(randomBytes(17)).slice(0, 26)}`;

/** Standard Webhooks secret format: 'whsec_' + base64 of 32 random bytes. */
export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export interface CreatedWebhook {
  webhookId: string;
  url: string;
  events: WebhookEvent[];
  secret: string;
  createdAt: string;
}

export interface WebhookSummary {
  webhookId: string;
  url: string;
  events: WebhookEvent[];
  createdAt: string;
  /** While a rotated-out secret still signs beside the new one: when it stops. */
  previousSecretExpiresAt: string | null;
}

export interface RotatedSecret {
  webhookId: string;
  secret: string;
  previousSecretExpiresAt: string;
}

type RegistrationDeps = Pick<
  CoreDeps,
  'repos' | 'clock' | 'config' | 'resolveHost' | 'audit' | 'webhookUrlGuard'
>;

/**
 * POST /webhooks: the events must be ones the caller's roles may hear, the URL must pass the URL
 * guard (https to public addresses; plain http to loopback on the local stack only), and the client
 * must have fewer than maxWebhooksPerClient. The secret is shown here and on rotation only.
 */
export async function createWebhook(
  deps: RegistrationDeps,
  input: { url: string; events: readonly WebhookEvent[]; caller: Caller; requestId: string },
): Promise<CreatedWebhook> {
  const events = [...new Set(input.events)].sort();
  for (const event of events) {
    const roles = eventRoles[event];
    if (!roles.some((role) => input.caller.roles.includes(role)))
      throw new ForbiddenError(`Subscribing to ${event} needs the ${roles.join(' or ')} role`);
  }
  const check = await webhookUrlGuardOf(deps)(input.url);
  if (!check.ok) {
    throw new InvalidRequestError(`The webhook URL is refused: ${check.reason}`, [
      { field: 'url', message: check.reason },
    ]);
  }
  const record: WebhookRecord = {
    webhookId: newWebhookId(),
    clientId: input.caller.clientId,
    url: check.url.href,
    events,
    secret: newWebhookSecret(),
    createdAt: deps.clock.now().toISOString(),
  };
  try {
    await deps.repos.webhooks.create(record, maxWebhooksPerClient);
  } catch (error) {
    if (error instanceof WebhookLimitReached) throw new WebhookLimitError(error.limit);
    throw error;
  }
  await deps.audit.record({
    action: 'webhook.create',
    outcome: 'success',
    requestId: input.requestId,
    clientId: input.caller.clientId,
    webhookId: record.webhookId,
  });
  const { webhookId, url, secret, createdAt } = record;
  return { webhookId, url, events, secret, createdAt };
}

/** GET /webhooks: the caller's webhooks, oldest first, without their secrets. */
export async function listWebhooks(
  deps: Pick<CoreDeps, 'repos' | 'clock'>,
  caller: Caller,
): Promise<{ webhooks: WebhookSummary[] }> {
  const now = deps.clock.now().getTime();
  const records = await deps.repos.webhooks.listForClient(caller.clientId);
  return {
    webhooks: records.map((record) => ({
      webhookId: record.webhookId,
      url: record.url,
      events: record.events,
      createdAt: record.createdAt,
      previousSecretExpiresAt:
        record.previousSecretExpiresAt && Date.parse(record.previousSecretExpiresAt) > now
          ? record.previousSecretExpiresAt
          : null,
    })),
  };
}

const unknownWebhook = () => new NotFoundError('No webhook with this webhookId', { field: 'webhookId' });

/** DELETE /webhooks/{webhookId}: another client's webhook is the same 404 as an unknown one. */
export async function deleteWebhook(
  deps: Pick<CoreDeps, 'repos' | 'audit'>,
  input: { webhookId: string; caller: Caller; requestId: string },
): Promise<{ webhookId: string; deleted: true }> {
  if (!(await deps.repos.webhooks.delete(input.webhookId, input.caller.clientId))) throw unknownWebhook();
  await deps.audit.record({
    action: 'webhook.delete',
    outcome: 'success',
    requestId: input.requestId,
    clientId: input.caller.clientId,
    webhookId: input.webhookId,
  });
  return { webhookId: input.webhookId, deleted: true };
}

/**
 * POST /webhooks/{webhookId}/rotate-secret: a new secret signs from now on; the one it replaces keeps
 * signing beside it for 24 hours, so receivers can switch without missing a verifiable event.
 */
export async function rotateWebhookSecret(
  deps: Pick<CoreDeps, 'repos' | 'audit' | 'clock'>,
  input: { webhookId: string; caller: Caller; requestId: string },
): Promise<RotatedSecret> {
  const rotated = await deps.repos.webhooks.rotateSecret(
    input.webhookId,
    input.caller.clientId,
    newWebhookSecret(),
    deps.clock.now(),
  );
  if (!rotated?.previousSecretExpiresAt) throw unknownWebhook();
  await deps.audit.record({
    action: 'webhook.rotate-secret',
    outcome: 'success',
    requestId: input.requestId,
    clientId: input.caller.clientId,
    webhookId: input.webhookId,
  });
  return {
    webhookId: rotated.webhookId,
    secret: rotated.secret,
    previousSecretExpiresAt: rotated.previousSecretExpiresAt,
  };
}
