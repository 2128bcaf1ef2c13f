import { performance } from 'node:perf_hooks';
import { createApiKey } from '../scripts/admin/api-keys.js';
import type { Role } from '../lib/kernel/route.js';
import { tiers as defaultTiers, type TierTable } from '../lib/kernel/tiers.js';
import { startLocalStack, type LocalStack } from '../local/stack.js';
import { newHashedPan, sampleReceipt } from '../test/support/fixtures.js';
import { DynamoCallCounter } from './lib/dynamo-probe.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { inPool, post, text } from './lib/setup.js';
import { median, percentile, rotated, round } from './lib/stats.js';

/**
 * Claims on the local stack (issue 20): what one claimed transaction costs for a card with 0, 1, 10
 * and 400 escrowed receipts near its time, none matching (a caller guessing, without the evidence).
 * The keyed evidence index makes a claim one look-up per transaction, so the medians should be the
 * same (target: largest over smallest ≤ 1.10), and so should the DynamoDB calls, counted on the
 * service's own document client for one claim of one transaction and per transaction more.
 * The cards take turns claim by claim, in an order that rotates, so none always runs first.
 */

export interface ClaimBenchOptions {
  /** Escrowed receipts near the claimed time, per card. */
  populations: readonly number[];
  rounds: number;
  claimsPerRound: number;
}

interface CardResult {
  receiptsInWindow: number;
  samples: number;
  p50Ms: number;
  p90Ms: number;
  /** DynamoDB calls of one claim naming one transaction, by SDK command. */
  callsOneTransaction: Record<string, number>;
  /** Calls each further transaction of a claim adds (one claim of 5 against one of 1, over 4). */
  callsPerTransaction: number;
}

export interface ClaimBenchResult {
  options: ClaimBenchOptions;
  cards: CardResult[];
  ratioLargestToSmallestMedian: number;
  targets: TargetCheck[];
}

const CLAIMED_AT = Date.parse('2026-11-21T12:00:00Z');
const WINDOW_MINUTES = 15;
/** No receipt below has this amount: every claim is a miss, as a guess is. */
const GUESSED_AMOUNT = 1;

async function apiKey(stack: LocalStack, roles: Role[]): Promise<string> {
  const created = await createApiKey(
    { repository: stack.deps.repos.apiKeys, now: () => stack.deps.clock.now() },
    { name: `bench ${roles.join('+')}`, roles, tier: 'enterprise' },
  );
  return created.apiKey;
}

/** `count` receipts of one card spread over ± the window around the claimed time, none of GUESSED_AMOUNT. */
async function escrow(stack: LocalStack, merchant: string, hashedPan: string, count: number): Promise<void> {
  const windowMs = WINDOW_MINUTES * 60_000;
  await inPool(
    Array.from({ length: count }, (_, index) => index),
    8,
    async (index) => {
      const base = sampleReceipt();
      const at = new Date(
        CLAIMED_AT - windowMs + Math.floor(((index + 0.5) * 2 * windowMs) / Math.max(count, 1)),
      );
      const receipt = sampleReceipt({
        transaction: { ...base.transaction, datetime: at.toISOString() },
        // Amounts near the guess but never it: same order of magnitude, every one different.
        summary: { ...base.summary, tipAmount: null, total: 1_000 + index },
      });
      await post(stack.url, '/api/v1/receipts/encrypt', merchant, {
        receipt,
        recipientIdentifier: { type: 'email', value: 'bench@example.com' },
        recipientHashedPan: hashedPan,
      });
    },
  );
}

async function claimOnce(
  stack: LocalStack,
  issuer: string,
  userId: string,
  transactions: number,
): Promise<void> {
  const data = await post(stack.url, '/api/v1/receipts/claim', issuer, {
    userId,
    transactions: Array.from({ length: transactions }, () => ({
      amount: GUESSED_AMOUNT,
      currency: 'USD',
      transactionDate: new Date(CLAIMED_AT).toISOString(),
    })),
  });
  if (data.released !== 0) throw new Error(`a guess released ${String(data.released)} receipts`);
}

const totalCalls = (calls: Record<string, number>): number =>
  Object.values(calls).reduce((sum, count) => sum + count, 0);

export async function runClaimBench(options: ClaimBenchOptions): Promise<ClaimBenchResult> {
  // Limits out of the way: the bench measures the claim, not the rate limiter or the daily allowance.
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
    const cards = [];
    for (const count of options.populations) {
      const hashedPan = newHashedPan();
      await escrow(stack, merchant, hashedPan, count);
      const pair = await post(stack.url, '/api/v1/onboarding/generate-keys', issuer);
      const registered = await post(stack.url, '/api/v1/onboarding/register', issuer, {
        hashedPan,
        publicKey: text(pair, 'publicKey'),
        keyId: text(pair, 'keyId'),
      });
      cards.push({ count, userId: text(registered, 'userId'), latencies: [] as number[] });
    }

    // The webhook poller's stream reads and sweeps would land in the timings and the call counts.
    await stack.dispatcher.stop();
    // Warm-up: module loading, the keyring, DynamoDB Local's JIT.
    for (const card of cards)
      for (let index = 0; index < 5; index += 1) await claimOnce(stack, issuer, card.userId, 1);

    // Claim by claim, the four cards take turns (in an order that rotates), so a change in the
    // machine's load falls on all four alike.
    for (let roundIndex = 0; roundIndex < options.rounds; roundIndex += 1) {
      for (let index = 0; index < options.claimsPerRound; index += 1) {
        for (const card of rotated(cards, roundIndex + index)) {
          const start = performance.now();
          await claimOnce(stack, issuer, card.userId, 1);
          card.latencies.push(performance.now() - start);
        }
      }
    }

    const counter = new DynamoCallCounter(stack.deps.dynamo.doc);
    // The fewest of five: now and then a claim also pays the rate limiter's lease refill (an UpdateItem
    // that belongs to no claim in particular), which is no part of what a claimed transaction costs.
    const callsOf = async (userId: string, transactions: number) => {
      let fewest: Record<string, number> | undefined;
      for (let attempt = 0; attempt < 5; attempt += 1) {
        counter.reset();
        await claimOnce(stack, issuer, userId, transactions);
        await counter.quiesce(50, 2_000);
        const calls = counter.byCommand();
        if (!fewest || totalCalls(calls) < totalCalls(fewest)) fewest = calls;
      }
      return fewest!;
    };
    const results: CardResult[] = [];
    for (const card of cards) {
      const one = await callsOf(card.userId, 1);
      const five = await callsOf(card.userId, 5);
      results.push({
        receiptsInWindow: card.count,
        samples: card.latencies.length,
        p50Ms: round(median(card.latencies), 2),
        p90Ms: round(percentile(card.latencies, 90), 2),
        callsOneTransaction: one,
        callsPerTransaction: round((totalCalls(five) - totalCalls(one)) / 4, 2),
      });
    }

    const medians = results.map((result) => result.p50Ms);
    const ratio = round(Math.max(...medians) / Math.min(...medians), 3);
    const callSets = new Set(
      results.map((result) => JSON.stringify([result.callsOneTransaction, result.callsPerTransaction])),
    );
    printTable(
      `POST /receipts/claim, one guessed transaction (no match), by escrowed receipts within ±${WINDOW_MINUTES} min of it`,
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
    console.log(`Largest / smallest median: ${ratio}`);
    const targets: TargetCheck[] = [
      {
        section: 'claims',
        target: 'claim p50, largest / smallest across 0, 1, 10, 400 receipts in the window ≤ 1.10',
        measured: `${ratio} (${medians.join(' / ')} ms)`,
        met: ratio <= 1.1,
      },
      {
        section: 'claims',
        target: 'DynamoDB calls per claimed transaction, equal across the four',
        measured: results
          .map((result) => `${totalCalls(result.callsOneTransaction)}+${result.callsPerTransaction}`)
          .join(' / '),
        met: callSets.size === 1,
      },
    ];
    return { options, cards: results, ratioLargestToSmallestMedian: ratio, targets };
  } finally {
    await stack.close();
  }
}
