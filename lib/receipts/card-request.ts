import type { Caller } from '../api-keys/authenticator.js';
import type { AuditAction } from '../db/audit.js';
import type { UserRecord } from '../db/users.js';
import type { CoreDeps } from '../app/deps.js';
import { NotFoundError } from '../kernel/errors.js';
import { ClaimLimitError } from './vocabulary.js';
import { checkTransactionDates, type EvidenceTransaction } from './evidence.js';

export type CardRequestDeps = Pick<
  CoreDeps,
  'clock' | 'config' | 'repos' | 'audit' | 'telemetry' | 'cardTags'
>;

/** An issuer naming card transactions of one of its users: a claim or a match. */
export interface CardRequest {
  userId: string;
  transactions: readonly EvidenceTransaction[];
  caller: Caller;
  requestId: string;
}

/**
 * What a claim and a match do before either looks anything up, in this order: the transaction dates
 * (a 400 spends nothing), the user (the caller's own, or one 404 whether it is unknown or another
 * client's), then the card's daily allowance with this client, one per named transaction, which
 * claims and matches spend together (DECISIONS, round 3). Per card and client, not per user: erasing
 * the user and registering the card again gives nobody a fresh allowance. Each refusal is audited
 * under `action`; the user is returned once the allowance is spent.
 */
export async function admitCardRequest(
  deps: CardRequestDeps,
  input: CardRequest,
  action: Extract<AuditAction, 'escrow.claim-request' | 'receipts.match'>,
): Promise<UserRecord> {
  const { caller, requestId } = input;
  checkTransactionDates(deps, input.transactions);
  const user = await deps.repos.users.getById(input.userId);
  if (!user || user.clientId !== caller.clientId) {
    await deps.audit.record({
      action,
      outcome: 'failure',
      reason: !user ? 'unknown user' : 'user of another client',
      requestId,
      clientId: caller.clientId,
      userId: input.userId,
    });
    // Another client's user is answered exactly like one that does not exist.
    throw new NotFoundError('No user with this userId is registered by this client');
  }

  const keyring = await deps.cardTags.keyring();
  const quota = await deps.repos.claimQuota.spend(
    `${keyring.allowanceSubject(user.cardTag)}#${caller.clientId}`,
    input.transactions.length,
    deps.config.claimDailyLimit,
    deps.clock.now(),
  );
  if (!quota.spent) {
    deps.telemetry.count('ClaimLimitRefusals');
    await deps.audit.record({
      action,
      outcome: 'failure',
      reason: 'daily claim limit reached',
      requestId,
      clientId: caller.clientId,
      userId: user.userId,
      counts: { transactions: input.transactions.length },
    });
    throw new ClaimLimitError(quota.retryAfterSeconds, deps.config.claimDailyLimit);
  }
  return user;
}
