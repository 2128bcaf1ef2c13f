import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { createApiKey } from '../scripts/admin/api-keys.js';
import type { Role } from '../lib/kernel/route.js';
import { tiers as defaultTiers, type TierTable } from '../lib/kernel/tiers.js';
import { matchReceiptsRoute } from '../functions/receipts/match-receipts/route.js';
import { startLocalStack, type LocalStack } from '../local/stack.js';
import { flattenedReceipt, newHashedPan } from '../test/support/fixtures.js';
import { DynamoCallCounter } from './lib/dynamo-probe.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { inPool, isRecord, post, text } from './lib/setup.js';
import { median, percentile, rotated, round } from './lib/stats.js';

const MATCH_PATH = matchReceiptsRoute.path;

/**
 * Claims and matches on the local stack (issues 20, 22 and 38): what one named card transaction costs
 * for a card with 0, 1, 10 and 400 receipts near its time, none matching (a caller guessing, without
 * the evidence), named by amount and time, and by an authorization code with an amount the card did
 * pay (every receipt is a gateway_b payment, charged at create, so each has its code's entries). A claim looks among the card's escrowed receipts, a match among the user's own; both make
 * the same look-ups in the keyed evidence index per transaction (three buckets by time, one by code), so within each the medians should be the
 * same (target: largest over smallest ≤ 1.10), and so should the DynamoDB calls, counted on the
 * service's own document client for one call naming one transaction and per transaction more.
 * The sixteen measured series (four cards claimed, four matched, each guessed by time and by code)
 * take turns call by call, in an order that rotates, so
 * none always runs first.
 */

export interface ClaimBenchOptions {
  /** Receipts near the named time, per card: escrowed ones for claims, the user's own for matches. */
  populations: readonly number[];
  rounds: number;
  /** Calls per card and round (claims and matches alike). */
  claimsPerRound: number;
}

interface CardResult {
  receiptsInWindow: number;
  samples: number;
  p50Ms: number;
  p90Ms: number;
  /** DynamoDB calls of one call naming one transaction, by SDK command. */
  callsOneTransaction: Record<string, number>;
  /** Calls each further transaction adds (one call of 5 against one of 1, over 4). */
  callsPerTransaction: number;
}

export interface ClaimBenchResult {
  options: ClaimBenchOptions;
  cards: CardResult[];
  ratioLargestToSmallestMedian: number;
  /** The same for POST /users/{userId}/receipts/match. */
  matches: { cards: CardResult[]; ratioLargestToSmallestMedian: number };
  /** Both again, each guessed transaction named by a wrong authorization code and a paid amount. */
  byCode: {
    claims: { cards: CardResult[]; ratioLargestToSmallestMedian: number };
    matches: { cards: CardResult[]; ratioLargestToSmallestMedian: number };
  };
  targets: TargetCheck[];
}

const CLAIMED_AT = Date.parse('2026-11-21T12:00:00Z');
const WINDOW_MINUTES = 15;
/** No receipt below has this amount: every claim and match is a miss, as a guess is. */
const GUESSED_AMOUNT = 1;
/** An amount the card did pay (its first receipt's), named with a code no payment was given. */
const PAID_AMOUNT = 1_000;
const GUESSED_CODE = 'ZZ9ZZ9';

type Guess = 'time' | 'code';

/** One card under measurement: how many receipts it has near the time, and one timed call for it. */
interface Card {
  count: number;
  call(transactions: number): Promise<void>;
  latencies: number[];
}

async function apiKey(stack: LocalStack, roles: Role[]): Promise<string> {
  const created = await createApiKey(
    { repository: stack.deps.repos.apiKeys, now: () => stack.deps.clock.now() },
    { name: `bench ${roles.join('+')}`, roles, tier: 'enterprise' },
  );
  return created.apiKey;
}

/**
 * `count` receipts paid with one card on gateway_b (charged at create: each carries its network
 * references, so each has entries by authorization code too), spread over ± the window around the
 * claimed time, none of GUESSED_AMOUNT: escrowed while the card has no user, the user's own once it has one.
 */
async function payWithCard(
  stack: LocalStack,
  merchant: string,
  hashedPan: string,
  count: number,
): Promise<void> {
  const windowMs = WINDOW_MINUTES * 60_000;
  await inPool(
    Array.from({ length: count }, (_, index) => index),
    8,
    async (index) => {
      const at = new Date(
        CLAIMED_AT - windowMs + Math.floor(((index + 0.5) * 2 * windowMs) / Math.max(count, 1)),
      );
      // Amounts near the guess but never it: same order of magnitude, every one different.
      const amount = PAID_AMOUNT + index;
      await post(stack.url, '/api/v1/payments/gateway_b/create', merchant, {
        ...flattenedReceipt({
          transactionDate: at.toISOString(),
          subtotal: amount,
          taxAmount: 0,
          totalAmount: amount,
          items: [
            {
              lineItemId: randomUUID(),
              name: 'Bench item',
              quantity: 1,
              unitPrice: amount,
              totalPrice: amount,
            },
          ],
        }),
        recipientHashedPan: hashedPan,
        cardNonce: 'cnon:card-nonce-ok',
      });
    },
  );
}

async function register(stack: LocalStack, issuer: string, hashedPan: string): Promise<string> {
  const pair = await post(stack.url, '/api/v1/onboarding/generate-keys', issuer);
  const registered = await post(stack.url, '/api/v1/onboarding/register', issuer, {
    hashedPan,
    publicKey: text(pair, 'publicKey'),
    keyId: text(pair, 'keyId'),
  });
  return text(registered, 'userId');
}

const guesses = (transactions: number, guess: Guess) =>
  Array.from({ length: transactions }, (_, index) => ({
    reference: `guess-${index}`,
    currency: 'USD',
    ...(guess === 'time'
      ? { amount: GUESSED_AMOUNT, transactionDate: new Date(CLAIMED_AT).toISOString() }
      : { amount: PAID_AMOUNT, authorizationCode: GUESSED_CODE }),
  }));

async function claimOnce(
  stack: LocalStack,
  issuer: string,
  userId: string,
  transactions: number,
  guess: Guess,
): Promise<void> {
  const data = await post(stack.url, '/api/v1/receipts/claim', issuer, {
    userId,
    transactions: guesses(transactions, guess).map(
      ({ reference: _reference, ...transaction }) => transaction,
    ),
  });
  if (data.released !== 0) throw new Error(`a guess released ${String(data.released)} receipts`);
}

async function matchOnce(
  stack: LocalStack,
  issuer: string,
  userId: string,
  transactions: number,
  guess: Guess,
): Promise<void> {
  const data = await post(stack.url, MATCH_PATH.replace('{userId}', userId), issuer, {
    transactions: guesses(transactions, guess),
  });
  const matches = Array.isArray(data.matches) ? data.matches : [];
  const found = matches.filter(
    (entry) => !isRecord(entry) || !Array.isArray(entry.receiptIds) || entry.receiptIds.length > 0,
  );
  if (matches.length !== transactions || found.length > 0)
    throw new Error(`a guess matched receipts: ${JSON.stringify(data).slice(0, 300)}`);
}

const totalCalls = (calls: Record<string, number>): number =>
  Object.values(calls).reduce((sum, count) => sum + count, 0);

/** The cards' results, one table and the two targets (flat median, equal calls) of one operation. */
function report(
  operation: string,
  title: string,
  results: CardResult[],
): { ratio: number; targets: TargetCheck[] } {
  const medians = results.map((result) => result.p50Ms);
  const ratio = round(Math.max(...medians) / Math.min(...medians), 3);
  const callSets = new Set(
    results.map((result) => JSON.stringify([result.callsOneTransaction, result.callsPerTransaction])),
  );
  printTable(
    title,
    [
      'receipts in window',
      'samples',
      'p50 ms',
      'p90 ms',
      'DynamoDB calls (1 transaction)',
      'calls per further transaction',
    ],
    results.map((result) => [
      result.receiptsInWindow,
      result.samples,
      result.p50Ms,
      result.p90Ms,
      Object.entries(result.callsOneTransaction)
        .map(([command, count]) => `${command.replace(/Command$/, '')} ${count}`)
        .join(', '),
      result.callsPerTransaction,
    ]),
  );
  console.log(`Largest / smallest median (${operation}): ${ratio}`);
  return {
    ratio,
    targets: [
      {
        section: 'claims',
        target: `${operation} p50, largest / smallest across 0, 1, 10, 400 receipts in the window ≤ 1.10`,
        measured: `${ratio} (${medians.join(' / ')} ms)`,
        met: ratio <= 1.1,
      },
      {
        section: 'claims',
        target: `DynamoDB calls per ${operation.startsWith('claim') ? 'claimed' : 'matched'} transaction, equal across the four`,
        measured: results
          .map((result) => `${totalCalls(result.callsOneTransaction)}+${result.callsPerTransaction}`)
          .join(' / '),
        met: callSets.size === 1,
      },
    ],
  };
}

export async function runClaimBench(options: ClaimBenchOptions): Promise<ClaimBenchResult> {
  // Limits out of the way: the bench measures the claim and the match, not the rate limiter or the daily allowance.
  const tiers: TierTable = {
    ...defaultTiers,
    enterprise: {
      ...defaultTiers.enterprise,
      requestsPerMinute: { general: 1_000_000, keyGeneration: 1_000_000, payments: 1_000_000 },
    },
  };
  const stack = await startLocalStack({
    inMemory: true,
    port: 0,
    logLevel: 'WARN',
    tiers,
    env: { CLAIM_DAILY_LIMIT: '100000', CLAIM_WINDOW_MINUTES: String(WINDOW_MINUTES) },
  });
  try {
    const merchant = await apiKey(stack, ['merchant']);
    const issuer = await apiKey(stack, ['issuer']);
    const claimed: Card[] = [];
    const matched: Card[] = [];
    const claimedByCode: Card[] = [];
    const matchedByCode: Card[] = [];
    for (const count of options.populations) {
      // Claimed: receipts escrowed for a card nobody had registered, then its user.
      const escrowedPan = newHashedPan();
      await payWithCard(stack, merchant, escrowedPan, count);
      const claimant = await register(stack, issuer, escrowedPan);
      claimed.push({ count, latencies: [], call: (n) => claimOnce(stack, issuer, claimant, n, 'time') });
      claimedByCode.push({
        count,
        latencies: [],
        call: (n) => claimOnce(stack, issuer, claimant, n, 'code'),
      });
      // Matched: the user first, then receipts sealed for it.
      const ownPan = newHashedPan();
      const owner = await register(stack, issuer, ownPan);
      await payWithCard(stack, merchant, ownPan, count);
      matched.push({ count, latencies: [], call: (n) => matchOnce(stack, issuer, owner, n, 'time') });
      matchedByCode.push({ count, latencies: [], call: (n) => matchOnce(stack, issuer, owner, n, 'code') });
    }
    const cards = [...claimed, ...matched, ...claimedByCode, ...matchedByCode];

    // The webhook poller's stream reads and sweeps would land in the timings and the call counts.
    await stack.dispatcher.stop();
    // Warm-up: module loading, the keyring, DynamoDB Local's JIT.
    for (const card of cards) for (let index = 0; index < 5; index += 1) await card.call(1);

    // Call by call, the eight cards take turns (in an order that rotates), so a change in the
    // machine's load falls on all of them alike.
    for (let roundIndex = 0; roundIndex < options.rounds; roundIndex += 1) {
      for (let index = 0; index < options.claimsPerRound; index += 1) {
        for (const card of rotated(cards, roundIndex + index)) {
          const start = performance.now();
          await card.call(1);
          card.latencies.push(performance.now() - start);
        }
      }
    }

    const counter = new DynamoCallCounter(stack.deps.dynamo.doc);
    // The fewest of five: now and then a call also pays the rate limiter's lease refill (an UpdateItem
    // that belongs to no call in particular), which is no part of what a named transaction costs.
    const callsOf = async (card: Card, transactions: number) => {
      let fewest: Record<string, number> | undefined;
      for (let attempt = 0; attempt < 5; attempt += 1) {
        counter.reset();
        await card.call(transactions);
        await counter.quiesce(50, 2_000);
        const calls = counter.byCommand();
        if (!fewest || totalCalls(calls) < totalCalls(fewest)) fewest = calls;
      }
      return fewest!;
    };
    const resultsOf = async (group: Card[]): Promise<CardResult[]> => {
      const results: CardResult[] = [];
      for (const card of group) {
        const one = await callsOf(card, 1);
        const five = await callsOf(card, 5);
        results.push({
          receiptsInWindow: card.count,
          samples: card.latencies.length,
          p50Ms: round(median(card.latencies), 2),
          p90Ms: round(percentile(card.latencies, 90), 2),
          callsOneTransaction: one,
          callsPerTransaction: round((totalCalls(five) - totalCalls(one)) / 4, 2),
        });
      }
      return results;
    };

    const claimResults = await resultsOf(claimed);
    const matchResults = await resultsOf(matched);
    const claimByCodeResults = await resultsOf(claimedByCode);
    const matchByCodeResults = await resultsOf(matchedByCode);
    const claims = report(
      'claim',
      `POST /receipts/claim, one guessed transaction (no match), by escrowed receipts within ±${WINDOW_MINUTES} min of it`,
      claimResults,
    );
    const matches = report(
      'match',
      `POST ${MATCH_PATH}, one guessed transaction (no match), by the user's receipts within ±${WINDOW_MINUTES} min of it`,
      matchResults,
    );
    const claimsByCode = report(
      'claim by code',
      `POST /receipts/claim, one wrong authorization code with a paid amount, by the card's escrowed receipts (each with its code's entries)`,
      claimByCodeResults,
    );
    const matchesByCode = report(
      'match by code',
      `POST ${MATCH_PATH}, one wrong authorization code with a paid amount, by the user's receipts (each with its code's entries)`,
      matchByCodeResults,
    );
    return {
      options,
      cards: claimResults,
      ratioLargestToSmallestMedian: claims.ratio,
      matches: { cards: matchResults, ratioLargestToSmallestMedian: matches.ratio },
      byCode: {
        claims: { cards: claimByCodeResults, ratioLargestToSmallestMedian: claimsByCode.ratio },
        matches: { cards: matchByCodeResults, ratioLargestToSmallestMedian: matchesByCode.ratio },
      },
      targets: [...claims.targets, ...matches.targets, ...claimsByCode.targets, ...matchesByCode.targets],
    };
  } finally {
    await stack.close();
  }
}
