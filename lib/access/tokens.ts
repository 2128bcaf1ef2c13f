import { randomUUID } from 'node:crypto';
import type { Caller } from '../api-keys/authenticator.js';
import type { AuditAction, AuditLog } from '../db/audit.js';
import type { AppDeps } from '../app/deps.js';
import { NotFoundError } from '../kernel/errors.js';
import { GrantForbiddenError, GrantLimitError } from './vocabulary.js';
import { redactEverywhere } from '../kernel/log.js';

export interface AccessToken {
  tokenId: string;
  userId: string;
  keyId: string;
  purpose: 'decrypt';
  grantedAt: string;
  expiresAt: string;
  sourceIp: string;
}

type AccessDeps = Pick<AppDeps, 'clock' | 'config' | 'repos' | 'audit' | 'telemetry'>;

/** The audit of one operation: every record carries its request, client and subject; outcomes vary. */
export const auditorFor =
  (
    audit: AuditLog,
    action: AuditAction,
    input: { caller: Caller; requestId: string; sourceIp: string; userId?: string; keyId?: string },
  ) =>
  (outcome: 'success' | 'failure', reason?: string): Promise<void> =>
    audit.record({
      action,
      outcome,
      ...(reason ? { reason } : {}),
      requestId: input.requestId,
      clientId: input.caller.clientId,
      ...(input.userId ? { userId: input.userId } : {}),
      ...(input.keyId ? { keyId: input.keyId } : {}),
      sourceIp: input.sourceIp,
    });

/**
 * A short-lived decrypt token for one of this client's users and that user's registered key. An
 * unknown user, another client's user and a mismatched key are refused alike.
 */
export async function grantAccess(
  deps: AccessDeps,
  input: { userId: string; keyId: string; caller: Caller; sourceIp: string; requestId: string },
): Promise<AccessToken> {
  const { caller } = input;
  const audit = auditorFor(deps.audit, 'access.grant', input);
  const user = await deps.repos.users.getById(input.userId);
  if (!user || user.clientId !== caller.clientId || user.keyId !== input.keyId) {
    await audit(
      'failure',
      !user
        ? 'unknown user'
        : user.clientId !== caller.clientId
          ? 'user of another client'
          : 'key is not the user key',
    );
    throw new GrantForbiddenError();
  }
  const now = deps.clock.now();
  const tokenId = randomUUID();
  const record: Omit<AccessToken, 'tokenId'> = {
    userId: user.userId,
    keyId: user.keyId,
    purpose: 'decrypt',
    grantedAt: now.toISOString(),
    expiresAt: new Date(now.getTime() + deps.config.tokenTtlSeconds * 1000).toISOString(),
    sourceIp: input.sourceIp,
  };
  const outcome = await deps.repos.accessTokens.grant(tokenId, { ...record, clientId: caller.clientId }, now);
  if (!outcome.granted) {
    deps.telemetry.count('GrantLimitRefusals');
    await audit('failure', 'active token limit reached');
    throw new GrantLimitError(outcome.retryAfterSeconds, deps.config.maxActiveTokens);
  }
  // UUID-shaped like every id that is logged, so only its value can mark it as one not to log.
  redactEverywhere(tokenId);
  await audit('success');
  return { tokenId, ...record };
}

export interface TokenRevocation {
  userId: string;
  keyId: string;
  revokedAt: string;
}

/**
 * Revokes a token granted to this client: it stops working at once and its slot is free for the
 * next grant. Another client's token and an unknown one are reported alike, as not found.
 */
export async function revokeAccess(
  deps: Pick<AppDeps, 'clock' | 'repos' | 'audit'>,
  input: { tokenId: string; caller: Caller; sourceIp: string; requestId: string },
): Promise<TokenRevocation> {
  const token = await deps.repos.accessTokens.revoke(input.tokenId, input.caller.clientId);
  const audit = {
    action: 'access.revoke' as const,
    requestId: input.requestId,
    clientId: input.caller.clientId,
    sourceIp: input.sourceIp,
  };
  if (!token) {
    await deps.audit.record({
      ...audit,
      outcome: 'failure',
      reason: 'unknown token or token of another client',
    });
    throw new NotFoundError('No access token with this id', { field: 'tokenId' });
  }
  // A real token id arrived in the path: whatever logs it from here on logs it redacted.
  redactEverywhere(input.tokenId);
  await deps.audit.record({ ...audit, outcome: 'success', userId: token.userId, keyId: token.keyId });
  return { userId: token.userId, keyId: token.keyId, revokedAt: deps.clock.now().toISOString() };
}
