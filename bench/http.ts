import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createApiKey } from '../scripts/admin/api-keys.js';
import { requireAllTables } from '../lib/kernel/config.js';
import { createDynamoClients } from '../lib/db/client.js';
import { USER_CACHE_MAX_AGE_MS } from '../lib/db/users.js';
import type { Role } from '../lib/kernel/route.js';
import { createStripeClient, loadStripeSdk } from '../lib/gateways/stripe-client.js';
import { applyPaymentState } from '../lib/payments/lifecycle.js';
import { newHashedPan } from '../test/support/fixtures.js';
import { RECEIPT_ID_PLACEHOLDER } from './lib/load-spec.js';
import type { LocalStack } from '../local/stack.js';
import { startFloorServer } from './floor.js';
import {
  DynamoCallCounter,
  callKinds,
  javaChildPid,
  measureDynamoFloor,
  processCpuMs,
  type CallKind,
  type FloorStats,
} from './lib/dynamo-probe.js';
import type { LoadOutcome } from './lib/load-spec.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { SkippingClock, withBenchStack } from './lib/bench-stack.js';
import {
  encryptBody,
  get,
  inPool,
  onboardUser,
  isRecord,
  paymentBody,
  post,
  runLoad,
  text,
  withIds,
  type Json,
  type User,
} from './lib/setup.js';
import { benchReceipt } from './lib/receipt.js';
import { round } from './lib/stats.js';
import {
  comparePerRequest,
  type EndpointPlan,
  type PerRequestOptions,
  type PerRequestResult,
  type Side,
} from './per-request.js';

/**
 * The whole service in-process (DynamoDB Local, HTTP adapter; the gateway sandbox in a process of its
 * own), one endpoint at a time. Users, envelopes and tokens are made first through the API itself;
 * the load generator runs in a child process so it does not share the service's event loop. First
 * what one request costs at one connection against the bare handler of bench/floor.ts
 * (bench/per-request.ts), then, as information, the same endpoints under autocannon at 16 connections.
 */

export interface HttpOptions {
  connections: number;
  durationSec: number;
  /** Registered users the load rotates over (grant-access allows 5 live tokens per user). */
  users: number;
  floorRounds: number;
  floorSliceMs: number;
  perRequest: PerRequestOptions;
}

type EndpointName =
  'receipts/encrypt' | 'receipts/decrypt' | 'keys/grant-access' | 'payments/gateway_a/create';

interface EndpointResult {
  path: string;
  connections: number;
  load: LoadOutcome;
  /** DynamoDB calls for one request on a warm instance, by SDK command name. */
  callsSingleRequest: Record<string, number>;
  /** Average DynamoDB calls per request over the whole load run, by kind. */
  callsPerRequestUnderLoad: Record<CallKind, number>;
  /** Calls per request × the isolated floor's p50 (at this run's concurrency), by kind. */
  dynamoFloorMs: number;
  /** p50 latency minus dynamoFloorMs: the brief's model. */
  beyondDynamoP50Ms: number;
  /** Time the handlers actually spent awaiting DynamoDB during the run, per request (mean). */
  dynamoMsPerRequestInSitu: number;
  /** Mean latency minus dynamoMsPerRequestInSitu. */
  beyondDynamoMeanMsInSitu: number;
  cpuMsPerRequest: {
    service: number;
    dynamoDbLocal: number | null;
    loadGenerator: number;
    /** All three: what one request costs the machine (the sandbox's, for payments, is left out). */
    total: number | null;
  };
  /**
   * What the machine's cores allow at that cost: cores ÷ total CPU per request is the most requests
   * per second it can serve, and with a fixed number of connections (Little's law) no mean latency
   * can be lower than connections ÷ that rate. A p99 is at least the mean.
   */
  capacity: { maxRequestsPerSecond: number; meanLatencyFloorMs: number } | null;
  note?: string;
}

export interface HttpResult {
  options: HttpOptions;
  setup: { users: number; seconds: number; onboardingPerSecond: number };
  /** At the load's concurrency. */
  dynamoFloor: Record<CallKind, FloorStats>;
  dynamoFloorSingle: Record<CallKind, FloorStats>;
  perRequest: PerRequestResult;
  endpoints: Partial<Record<EndpointName, EndpointResult>>;
  targets: TargetCheck[];
}

const cores = cpus().length;

export async function runHttpBench(options: HttpOptions): Promise<HttpResult> {
  const workDir = await mkdtemp(join(tmpdir(), 'receipt-bench-http-'));
  try {
    // WARN: the per-request INFO access line would otherwise flood the bench output (and cost a write each).
    return await withBenchStack('WARN', (stack, clock, sandboxUrl) =>
      runAgainst(stack, clock, sandboxUrl, options, workDir),
    );
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

async function runAgainst(
  stack: LocalStack,
  clock: SkippingClock,
  sandboxUrl: string,
  options: HttpOptions,
  workDir: string,
): Promise<HttpResult> {
  if (!stack.url.startsWith('http://127.0.0.1:'))
    throw new Error(`the stack is not on loopback: ${stack.url}`);
  const admin = { repository: stack.deps.repos.apiKeys, now: () => clock.now() };
  const key = async (name: string, roles: Role[]) => {
    const created = await createApiKey(admin, { name, roles, tier: 'enterprise' });
    return { apiKey: created.apiKey, clientId: created.record.clientId };
  };
  const issuer = await key('bench-issuer', ['issuer']);
  const issuerKey = issuer.apiKey;
  // One merchant key per merchant endpoint, so neither run eats into the other's per-minute budget.
  const encryptMerchant = await key('bench-merchant-encrypt', ['merchant']);
  const encryptKey = encryptMerchant.apiKey;
  const paymentMerchant = await key('bench-merchant-payments', ['merchant']);
  const paymentKey = paymentMerchant.apiKey;
  // Physical table name → its key, so the counters name the table of each call.
  const tableKeys = new Map(Object.entries(requireAllTables(stack.config)).map(([key, name]) => [name, key]));
  const counter = new DynamoCallCounter(stack.deps.dynamo.doc, tableKeys);
  const javaPid = javaChildPid();
  const tokenTtlMs = stack.config.tokenTtlSeconds * 1000;
  const freeAllTokenSlots = () => clock.skip(tokenTtlMs + 1000);

  // ---- Setup: users through generate-keys + register (key generation runs on the 4-thread pool).
  const setupStart = performance.now();
  const users = await inPool(Array.from({ length: options.users }), 4, () =>
    onboardUser(stack.url, issuerKey),
  );
  // One stored envelope per user, for the decrypt runs.
  const envelopes = await inPool(users, 8, (user) =>
    post(stack.url, '/api/v1/receipts/encrypt', encryptKey, withIds(encryptBody(user))),
  );
  const setupSeconds = (performance.now() - setupStart) / 1000;
  // Nothing else runs in this process while a round is timed: the local stack's webhook dispatcher
  // (the stream poller and the delivery sweeper, each a function of its own in AWS) polls DynamoDB
  // through the service's client and would charge its CPU and its Query to whichever side is running.
  await stack.dispatcher.stop();
  counter.reset();
  const idleCpu = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const idle = process.cpuUsage(idleCpu);
  const idleCalls = Object.values(counter.byCommand()).reduce((sum, count) => sum + count, 0);
  console.log(
    `  idle check, dispatcher stopped: ${idleCalls} DynamoDB calls and ${round((idle.user + idle.system) / 1000, 1)} ms CPU in 1 s with no request`,
  );
  if (idleCalls > 0)
    throw new Error(
      `something still calls DynamoDB in the background: ${JSON.stringify(counter.byTarget())}`,
    );
  console.log(
    `  setup: ${users.length} users onboarded and one envelope each in ${setupSeconds.toFixed(1)} s`,
  );

  // ---- DynamoDB floor, same client, at the load's concurrency and at one.
  const readKey = { pk: `USER#${users[0]?.userId ?? 'none'}` };
  const floorAt = (concurrency: number) =>
    measureDynamoFloor(stack.deps.dynamo.doc, stack.config.tables, readKey, {
      concurrency,
      rounds: options.floorRounds,
      sliceMs: options.floorSliceMs,
    });
  const dynamoFloor = await floorAt(options.connections);
  const dynamoFloorSingle = await floorAt(1);
  printTable(
    `DynamoDB Local floor: the service's own client, ${options.floorRounds} interleaved rounds per concurrency (ms)`,
    ['call', `p50 @${options.connections}`, `p99 @${options.connections}`, 'p50 @1', 'p99 @1', 'calls'],
    callKinds.map((kind) => [
      kind,
      dynamoFloor[kind].p50Ms,
      dynamoFloor[kind].p99Ms,
      dynamoFloorSingle[kind].p50Ms,
      dynamoFloorSingle[kind].p99Ms,
      dynamoFloor[kind].calls + dynamoFloorSingle[kind].calls,
    ]),
  );

  const grantTokens = () =>
    inPool(users, 8, async (user) =>
      text(
        await post(stack.url, '/api/v1/keys/grant-access', issuerKey, {
          userId: user.userId,
          keyId: user.keyId,
        }),
        'tokenId',
      ),
    );
  const decryptBodiesFor = (tokens: string[]) =>
    users.map((user, index) => ({
      envelope: envelopes[index],
      accessTokenId: tokens[index],
      privateKey: user.privateKey,
    }));

  // ---- Per request at one connection: the service against the bare handler, in interleaved rounds.
  const floorDynamo = createDynamoClients({ region: stack.config.region, endpoint: stack.dynamoDbEndpoint });
  const tables = requireAllTables(stack.config);
  const floorServer = await startFloorServer({
    doc: floorDynamo.doc,
    tables,
    clock,
    escrow: stack.deps.escrow,
    clients: {
      merchant: encryptMerchant.clientId,
      issuer: issuer.clientId,
      payments: paymentMerchant.clientId,
    },
    retention: {
      receiptDays: stack.config.receiptRetentionDays,
      escrowDays: stack.config.escrowRetentionDays,
      auditDays: stack.config.auditRetentionDays,
    },
    tokens: { ttlSeconds: stack.config.tokenTtlSeconds, maxActive: stack.config.maxActiveTokens },
    cardTags: stack.deps.cardTags,
    claims: { windowMinutes: stack.config.claimWindowMinutes, dailyLimit: stack.config.claimDailyLimit },
    sandboxUrl,
  });
  // ---- State for the endpoints a request can be made once against, made through the service, untimed.
  const range = (count: number) => Array.from({ length: count }, (_, index) => index);
  const tillStripe = createStripeClient(await loadStripeSdk(), {
    secretKey: 'sk_test_bench_sandbox',
    baseUrl: sandboxUrl,
    maxNetworkRetries: 2,
    timeoutMs: 10_000,
  });
  interface Paid {
    paymentId: string;
    saleReceiptId: string;
    user: User;
  }
  const payAtTill = async (paymentId: string): Promise<void> => {
    await tillStripe.paymentIntents.confirm(paymentId, { payment_method: 'pm_card_visa' });
    // The sandbox here posts no events (it would, to a service it knew of, in the middle of timed
    // rounds): the payment's success is applied by the function the gateway-events endpoint runs.
    await applyPaymentState(stack.deps, {
      gateway: 'gateway_a',
      paymentId,
      state: 'succeeded',
      requestId: randomUUID(),
    });
  };
  /**
   * Payments made with payments/create and paid at the till (the intent confirmed in the sandbox with
   * the real stripe SDK): each has its whole amount left to refund.
   */
  const paidPayments = (count: number): Promise<Paid[]> =>
    inPool(range(count), 8, async (index) => {
      const user = users[index % users.length] as User;
      const created = await post(
        stack.url,
        '/api/v1/payments/gateway_a/create',
        paymentKey,
        withIds(paymentBody(user)),
      );
      const paymentId = text(created, 'paymentId');
      await payAtTill(paymentId);
      const pointers = created.receiptMetadata;
      return { paymentId, saleReceiptId: isRecord(pointers) ? text(pointers, 'receiptId') : '', user };
    });
  /** A partial refund of a third of the fixture's 1,548: the amount rule shares the tax out. */
  const REFUND_AMOUNT = 500;
  const refundPath = (paymentId: string) => `/api/v1/payments/gateway_a/${paymentId}/refunds`;
  const refundBody = () => ({ refundId: RECEIPT_ID_PLACEHOLDER, amount: REFUND_AMOUNT });

  /**
   * Claimants: cards with receipts escrowed for them (encrypt before the card had a user), then
   * registered with the first user's public key imported (a key of its own per user; the same key
   * material, so the checks below can open what a claim released). At most CLAIMS_PER_CARD claims per
   * card, each naming one receipt's amount: within the card's daily allowance (200) with no setting changed.
   */
  const CLAIMS_PER_CARD = 100;
  const claimant = users[0] as User;
  interface Claim {
    userId: string;
    keyId: string;
    body: { userId: string; transactions: { amount: number; currency: string; transactionDate: string }[] };
  }
  const escrowedClaims = async (count: number): Promise<Claim[]> => {
    const at = clock.now().toISOString();
    const base = benchReceipt();
    const cards = await inPool(range(Math.ceil(count / CLAIMS_PER_CARD)), 2, async (card) => {
      const hashedPan = newHashedPan();
      const amounts = range(Math.min(CLAIMS_PER_CARD, count - card * CLAIMS_PER_CARD)).map((i) => 1_000 + i);
      await inPool(amounts, 4, (amount) =>
        post(
          stack.url,
          '/api/v1/receipts/encrypt',
          encryptKey,
          withIds(
            encryptBody(
              { hashedPan },
              {
                transaction: { ...base.transaction, datetime: at },
                summary: { ...base.summary, tipAmount: null, total: amount },
              },
            ),
          ),
        ),
      );
      const imported = await post(stack.url, '/api/v1/onboarding/keys', issuerKey, {
        publicKey: claimant.publicKey,
      });
      const keyId = text(imported, 'keyId');
      const registered = await post(stack.url, '/api/v1/onboarding/register', issuerKey, {
        hashedPan,
        publicKey: text(imported, 'publicKey'),
        keyId,
      });
      const userId = text(registered, 'userId');
      return amounts.map((amount): Claim => ({
        userId,
        keyId,
        body: { userId, transactions: [{ amount, currency: base.summary.currency, transactionDate: at }] },
      }));
    });
    return cards.flat();
  };

  /** The service's decrypt, with a token granted for `user`, of the stored receipt `receiptId`. */
  const openThroughService = async (
    receiptId: string,
    merchantKey: string,
    user: { userId: string; keyId: string },
  ): Promise<Json> => {
    const stored = await get(stack.url, `/api/v1/receipts/${receiptId}`, merchantKey);
    const grant = await post(stack.url, '/api/v1/keys/grant-access', issuerKey, {
      userId: user.userId,
      keyId: user.keyId,
    });
    return post(stack.url, '/api/v1/receipts/decrypt', issuerKey, {
      envelope: stored.envelope,
      accessTokenId: text(grant, 'tokenId'),
      privateKey: claimant.privateKey,
    });
  };

  /**
   * A refund of REFUND_AMOUNT made through `baseUrl` (the floor's or the service's), as the service then
   * sees it: listed as made, and the sale partially refunded.
   */
  const refundSeenByService = async (baseUrl: string, paid: Omit<Paid, 'user'>): Promise<Json> => {
    const refund = await post(baseUrl, refundPath(paid.paymentId), paymentKey, {
      refundId: randomUUID(),
      amount: REFUND_AMOUNT,
    });
    const listed = await get(stack.url, refundPath(paid.paymentId), paymentKey);
    const [entry] = Array.isArray(listed.refunds) ? (listed.refunds as unknown[]) : [];
    if (!isRecord(entry) || entry.refundId !== refund.refundId || entry.status !== 'succeeded')
      throw new Error(`the service does not list the refund as it was made: ${JSON.stringify(listed)}`);
    const sale = await get(stack.url, `/api/v1/receipts/${paid.saleReceiptId}`, paymentKey);
    if (sale.paymentStatus !== 'partially_refunded')
      throw new Error(`the sale's status is ${String(sale.paymentStatus)} after its refund`);
    return refund;
  };

  /**
   * A floor that skipped work would flatter the service's ratio, so what it makes must be usable by
   * the service: its envelope and its token open with the service's decrypt, the service's match finds
   * its receipt by the evidence entries it wrote, and the service finds the transaction its payment
   * mapped, the sale's status it recorded, and refunds its payment from the record and sealed basis it
   * wrote.
   */
  const checkFloorAgainstService = async (user: User): Promise<void> => {
    const at = clock.now().toISOString();
    const base = benchReceipt();
    const envelope = await post(
      floorServer.url,
      '/api/v1/receipts/encrypt',
      encryptKey,
      withIds(encryptBody(user, { transaction: { ...base.transaction, datetime: at } })),
    );
    const grant = await post(floorServer.url, '/api/v1/keys/grant-access', issuerKey, {
      userId: user.userId,
      keyId: user.keyId,
    });
    const receipt = await post(stack.url, '/api/v1/receipts/decrypt', issuerKey, {
      envelope,
      accessTokenId: text(grant, 'tokenId'),
      privateKey: user.privateKey,
    });
    if (receipt.receiptId !== envelope.receiptId)
      throw new Error('the floor: its envelope did not decrypt to its receipt');
    const matched = await post(stack.url, `/api/v1/users/${user.userId}/receipts/match`, issuerKey, {
      transactions: [
        {
          reference: 'floor-check',
          amount: base.summary.total,
          currency: base.summary.currency,
          transactionDate: at,
        },
      ],
    });
    const [match] = Array.isArray(matched.matches) ? (matched.matches as unknown[]) : [];
    if (
      !isRecord(match) ||
      !Array.isArray(match.receiptIds) ||
      !match.receiptIds.includes(envelope.receiptId)
    )
      throw new Error(`the floor: the service's match does not find its receipt: ${JSON.stringify(matched)}`);
    const payment = await post(
      floorServer.url,
      '/api/v1/payments/gateway_a/create',
      paymentKey,
      withIds(paymentBody(user)),
    );
    const pointers = payment.receiptMetadata;
    const floorSale = isRecord(pointers) ? pointers : {};
    const mapping = await fetch(`${stack.url}/api/v1/transactions/${String(floorSale.transactionId)}`, {
      headers: { 'x-api-key': paymentKey },
    });
    if (mapping.status !== 200)
      throw new Error(`the floor: its payment's transaction is not found by the service (${mapping.status})`);
    const floorSaleReceiptId = text(floorSale, 'receiptId');
    const pending = await get(stack.url, `/api/v1/receipts/${floorSaleReceiptId}`, paymentKey);
    if (pending.paymentStatus !== 'pending')
      throw new Error(`the floor: its sale's status is ${String(pending.paymentStatus)}, not pending`);
    await payAtTill(text(payment, 'paymentId'));
    await refundSeenByService(stack.url, {
      paymentId: text(payment, 'paymentId'),
      saleReceiptId: floorSaleReceiptId,
    }).catch((error: unknown) => {
      throw new Error(`the floor's payment, refunded by the service: ${String(error)}`);
    });

    // Its refund: listed by the service, the sale's status moved, the refund receipt sealed for the
    // sale's cardholder and opened by the service's decrypt.
    const [paid] = await paidPayments(1);
    if (paid?.user !== claimant) throw new Error('the check pays with the first user');
    const refund = await refundSeenByService(floorServer.url, paid).catch((error: unknown) => {
      throw new Error(`the floor's refund: ${String(error)}`);
    });
    const refundReceipt = await openThroughService(text(refund, 'receiptId'), paymentKey, claimant);
    const summary = refundReceipt.summary;
    if (
      refundReceipt.type !== 'refund' ||
      refundReceipt.relatedReceiptId !== paid.saleReceiptId ||
      !isRecord(summary) ||
      summary.total !== REFUND_AMOUNT ||
      !isRecord(refundReceipt.cardTransaction) ||
      !isRecord(refundReceipt.cardTransaction.providerIds) ||
      refundReceipt.cardTransaction.providerIds.paymentIntentId !== paid.paymentId ||
      typeof refundReceipt.cardTransaction.providerIds.refundId !== 'string'
    )
      throw new Error(
        'the floor: its refund receipt does not open to the refund with its network references',
      );

    // Its claim: the receipt released for the claimant's key, and opened by the service's decrypt.
    const [claim] = await escrowedClaims(1);
    if (!claim) throw new Error('no claim prepared');
    const claimed = await post(floorServer.url, '/api/v1/receipts/claim', issuerKey, claim.body);
    const [result] = Array.isArray(claimed.results) ? (claimed.results as unknown[]) : [];
    const receiptIds = isRecord(result) && Array.isArray(result.receiptIds) ? result.receiptIds : [];
    if (claimed.released !== 1 || typeof receiptIds[0] !== 'string')
      throw new Error(`the floor: its claim released ${JSON.stringify(claimed)}`);
    const released = await openThroughService(receiptIds[0], encryptKey, claim);
    if (released.receiptId !== receiptIds[0])
      throw new Error('the floor: the receipt its claim released does not open for the claimant');
  };
  let perRequest: PerRequestResult;
  try {
    const sides: { service: Side; floor: Side } = {
      service: { url: stack.url, counter, notChargedCpuMicros: () => stack.adapterCpuMicros() },
      floor: { url: floorServer.url, counter: new DynamoCallCounter(floorDynamo.doc, tableKeys) },
    };
    // Decrypt tokens must stay live through a round; they are granted afresh when half their life is gone.
    let decryptTokens: { at: number; tokens: string[] } | undefined;
    const liveTokens = async () => {
      if (!decryptTokens || clock.now().getTime() - decryptTokens.at > tokenTtlMs / 2) {
        freeAllTokenSlots();
        decryptTokens = { at: clock.now().getTime(), tokens: await grantTokens() };
      }
      return decryptTokens.tokens;
    };
    await checkFloorAgainstService(users[0] as User);
    const explainCall = (target: string): string | undefined => {
      const [command = '', table = ''] = target.split(' ');
      if (table === 'rateLimits')
        return 'rate-limit lease: the per-minute budget is claimed from its shared counter in leases of 1, 2, 4… units up to 1 % of it, a new one each window (lib/db/rate-limits.ts); the floor counts nothing';
      if (table === 'apiKeys')
        return `API-key cache refresh: a key's record is kept ${stack.config.apiKeyCacheTtlSeconds} s (API_KEY_CACHE_TTL_SECONDS); the floor knows its callers`;
      if (table === 'users' && command.startsWith('Get'))
        return `recipient cache refresh: a recipient found is kept ${USER_CACHE_MAX_AGE_MS / 1000} s (lib/db/users.ts), and the bench's clock moves on by the token lifetime before grant runs, so each of the ${users.length} recipients is read once more; the floor keeps them as long, so a difference here is the two sides' rounds meeting the 30 s at different moments`;
      if (table === 'accessTokens' && command.startsWith('TransactWrite'))
        return 'slot retries: a grant whose random first slot is taken tries the next (both sides draw at random)';
      return undefined;
    };
    const warmPayments: Paid[] = [];
    const warmClaims: Claim[] = [];
    let warmUser = 0;
    const nextUser = () => users[warmUser++ % users.length] as User;
    const plans: EndpointPlan[] = [
      {
        name: 'receipts/encrypt',
        path: '/api/v1/receipts/encrypt',
        apiKey: encryptKey,
        explainCall,
        bodiesForRound: () => Promise.resolve(users.map((user) => encryptBody(user))),
        warmUp: async (side) => {
          await post(side.url, '/api/v1/receipts/encrypt', encryptKey, withIds(encryptBody(nextUser())));
        },
      },
      {
        name: 'receipts/decrypt',
        path: '/api/v1/receipts/decrypt',
        apiKey: issuerKey,
        explainCall,
        bodiesForRound: async () => decryptBodiesFor(await liveTokens()),
        warmUp: async (side) => {
          const tokens = await liveTokens();
          await post(side.url, '/api/v1/receipts/decrypt', issuerKey, decryptBodiesFor(tokens)[0]);
        },
      },
      {
        name: 'keys/grant-access',
        path: '/api/v1/keys/grant-access',
        apiKey: issuerKey,
        explainCall,
        bodiesForRound: () =>
          Promise.resolve(users.map((user) => ({ userId: user.userId, keyId: user.keyId }))),
        beforeRun: freeAllTokenSlots,
        // Three grants per user at most: every grant finds a free slot within a few tries.
        maxRequests: users.length * 3,
        warmUp: async (side) => {
          const user = nextUser();
          await post(side.url, '/api/v1/keys/grant-access', issuerKey, {
            userId: user.userId,
            keyId: user.keyId,
          });
        },
      },
      {
        name: 'payments/gateway_a/create',
        path: '/api/v1/payments/gateway_a/create',
        apiKey: paymentKey,
        explainCall,
        bodiesForRound: () => Promise.resolve(users.map(paymentBody)),
        warmUp: async (side) => {
          await post(
            side.url,
            '/api/v1/payments/gateway_a/create',
            paymentKey,
            withIds(paymentBody(nextUser())),
          );
        },
      },
      {
        name: 'payments/gateway_a/refund',
        path: refundPath('{paymentId}'),
        apiKey: paymentKey,
        // Fair because both sides start from the same state: a refund takes what is left of a payment,
        // so each request gets a payment of its own, made and paid before the run (untimed) the same
        // way for the service's runs and the floor's.
        note:
          `each request refunds ${REFUND_AMOUNT} of a payment of its own (1,548, made with payments/create and ` +
          'confirmed in the sandbox before the run, untimed, alike for both sides): a first, partial refund of a ' +
          "paid sale, its refund receipt sealed for the sale's registered cardholder",
        explainCall,
        prepareRun: async (_side, _round, requests) => {
          const paid = await paidPayments(requests);
          return { bodies: paid.map(refundBody), paths: paid.map((each) => refundPath(each.paymentId)) };
        },
        prepareWarmUp: async (requests) => {
          warmPayments.push(...(await paidPayments(requests)));
        },
        warmUp: async (side) => {
          const paid = warmPayments.pop();
          if (!paid) throw new Error('no payment left for the refund warm-up');
          await post(side.url, refundPath(paid.paymentId), paymentKey, {
            refundId: randomUUID(),
            amount: REFUND_AMOUNT,
          });
        },
      },
      {
        name: 'receipts/claim',
        path: '/api/v1/receipts/claim',
        apiKey: issuerKey,
        // A claim that releases is the endpoint's whole work (the look-ups a miss makes, then the escrow
        // unwrap, the re-wrap, the release and its evidence); a miss would leave most of it untimed.
        note:
          'each request names one card transaction that releases one receipt escrowed for its card (made with ' +
          `receipts/encrypt before the card was registered, untimed, alike for both sides; ${CLAIMS_PER_CARD} per ` +
          "card, within the card's daily allowance): the look-ups of a claim that matches nothing, then the " +
          'escrow unwrap, the re-wrap for the user key, the release and its evidence entries',
        explainCall,
        prepareRun: async (_side, _round, requests) => ({
          bodies: (await escrowedClaims(requests)).map((claim) => claim.body),
        }),
        prepareWarmUp: async (requests) => {
          warmClaims.push(...(await escrowedClaims(requests)));
        },
        warmUp: async (side) => {
          const claim = warmClaims.pop();
          if (!claim) throw new Error('no escrowed receipt left for the claim warm-up');
          const claimed = await post(side.url, '/api/v1/receipts/claim', issuerKey, claim.body);
          if (claimed.released !== 1) throw new Error(`a warm-up claim released ${String(claimed.released)}`);
        },
      },
    ];
    perRequest = await comparePerRequest(sides, plans, options.perRequest, workDir);
  } finally {
    await floorServer.close();
    floorDynamo.client.destroy();
  }

  const endpoints: Partial<Record<EndpointName, EndpointResult>> = {};

  async function measureEndpoint(
    name: EndpointName,
    path: string,
    apiKey: string,
    bodies: unknown[],
    oneRequestBody: () => unknown,
    extra: { maxRequests?: number; note?: string } = {},
  ): Promise<void> {
    const connections = options.connections;
    // Warm-up: JIT, lazily loaded SDKs (the payment gateway's), the API-key cache.
    for (let i = 0; i < 3; i++) await post(stack.url, path, apiKey, oneRequestBody());
    counter.reset();
    await post(stack.url, path, apiKey, oneRequestBody());
    const callsSingleRequest = counter.byCommand();

    counter.reset();
    const cpuBefore = process.cpuUsage();
    const javaBefore = javaPid === null ? null : processCpuMs(javaPid);
    const load = await runLoad(
      {
        url: stack.url,
        path,
        apiKey,
        connections,
        durationSec: options.durationSec,
        ...(extra.maxRequests ? { maxRequests: extra.maxRequests } : {}),
        bodies: bodies.map((body) => JSON.stringify(body)),
        timeoutSec: 30,
      },
      workDir,
    );
    // Requests abandoned at the deadline still run to completion in the service; their calls count too.
    await counter.quiesce(1500, 30_000);
    const cpu = process.cpuUsage(cpuBefore);
    const javaAfter = javaPid === null ? null : processCpuMs(javaPid);
    const byKind = counter.byKind();
    const requests = Math.max(1, load.sent);
    const serviceCpu = (cpu.user + cpu.system) / 1000 / requests;
    const javaCpu = javaBefore === null || javaAfter === null ? null : (javaAfter - javaBefore) / requests;
    // The load generator's work ends with its last response; the service's with the last request sent.
    const loadCpu = load.cpuMs / Math.max(1, load.requests);
    const totalCpu = javaCpu === null ? null : serviceCpu + javaCpu + loadCpu;
    const maxRequestsPerSecond = totalCpu === null ? null : (cores * 1000) / totalCpu;
    const millis = counter.millisByKind();
    const callsPerRequestUnderLoad = Object.fromEntries(
      callKinds.map((kind) => [kind, round(byKind[kind] / requests, 2)]),
    ) as Record<CallKind, number>;
    const dynamoFloorMs = round(
      callKinds.reduce((sum, kind) => sum + callsPerRequestUnderLoad[kind] * dynamoFloor[kind].p50Ms, 0),
      2,
    );
    // The handlers await their calls one after another (read in lib/), so per-request call time adds up.
    const dynamoMsInSitu = round(callKinds.reduce((sum, kind) => sum + millis[kind], 0) / requests, 2);
    endpoints[name] = {
      path,
      connections,
      load,
      callsSingleRequest,
      callsPerRequestUnderLoad,
      dynamoFloorMs,
      beyondDynamoP50Ms: round(load.latencyMs.p50 - dynamoFloorMs, 2),
      dynamoMsPerRequestInSitu: dynamoMsInSitu,
      beyondDynamoMeanMsInSitu: round(load.latencyMs.mean - dynamoMsInSitu, 2),
      cpuMsPerRequest: {
        // The parent's CPU is the service (server, handlers, SDK clients); the load generator is a child process.
        service: round(serviceCpu, 3),
        dynamoDbLocal: javaCpu === null ? null : round(javaCpu, 3),
        loadGenerator: round(loadCpu, 3),
        total: totalCpu === null ? null : round(totalCpu, 3),
      },
      capacity:
        maxRequestsPerSecond === null
          ? null
          : {
              maxRequestsPerSecond: round(maxRequestsPerSecond, 0),
              meanLatencyFloorMs: round((connections / maxRequestsPerSecond) * 1000, 1),
            },
      ...(extra.note ? { note: extra.note } : {}),
    };
    const status = Object.entries(load.statusCodes)
      .map(([code, count]) => `${code}×${count}`)
      .join(' ');
    console.log(
      `  ${name} @${connections}: ${load.requests} requests in ${load.durationSec} s (${status})${load.firstErrorBody ? `; first error ${load.firstErrorBody}` : ''}`,
    );
  }

  // ---- As information: the same endpoints with 16 connections, where on two cores shared with
  // DynamoDB Local and the load generator the latency is mostly the emulator's queue.
  await measureEndpoint(
    'receipts/encrypt',
    '/api/v1/receipts/encrypt',
    encryptKey,
    users.map((user) => encryptBody(user)),
    () => withIds(encryptBody(users[0] as User)),
  );

  // Tokens granted now are live (≤ 180 s of the bench's clock) for the whole run; one slot each.
  freeAllTokenSlots();
  const decryptBodies = decryptBodiesFor(await grantTokens());
  await measureEndpoint(
    'receipts/decrypt',
    '/api/v1/receipts/decrypt',
    issuerKey,
    decryptBodies,
    () => decryptBodies[0],
  );

  // Every slot is free again, so with three grants per user at most, every grant can succeed.
  freeAllTokenSlots();
  let warmUp = 0;
  await measureEndpoint(
    'keys/grant-access',
    '/api/v1/keys/grant-access',
    issuerKey,
    users.map((user) => ({ userId: user.userId, keyId: user.keyId })),
    () => {
      const user = users[warmUp++ % users.length] as User;
      return { userId: user.userId, keyId: user.keyId };
    },
    {
      maxRequests: users.length * 3,
      note: `capped at ${users.length * 3} grants (3 per user over ${users.length} users), every token slot free at the start`,
    },
  );

  await measureEndpoint(
    'payments/gateway_a/create',
    '/api/v1/payments/gateway_a/create',
    paymentKey,
    users.map(paymentBody),
    () => withIds(paymentBody(users[0] as User)),
    { note: 'the gateway sandbox runs in its own process; its CPU is in no column' },
  );

  printHttpTables(endpoints, options);
  const encrypt = endpoints['receipts/encrypt'];
  const targets: TargetCheck[] = [
    ...perRequest.targets,
    {
      section: 'http',
      target: `encrypt at ${options.connections} connections (was: p99 < 50 ms; kept as information)`,
      measured: encrypt
        ? `p99 ${encrypt.load.latencyMs.p99} ms (p50 ${encrypt.load.latencyMs.p50} ms, ${encrypt.load.requestsPerSecond} req/s, ${encrypt.load.non2xx} non-2xx)` +
          (encrypt.capacity
            ? `; ${encrypt.cpuMsPerRequest.total} ms CPU/request on ${cores} cores → mean ≥ ${encrypt.capacity.meanLatencyFloorMs} ms`
            : '')
        : 'not run',
      met: null,
      informational: true,
    },
  ];
  return {
    options,
    setup: {
      users: users.length,
      seconds: round(setupSeconds, 1),
      onboardingPerSecond: round(users.length / setupSeconds, 1),
    },
    dynamoFloor,
    dynamoFloorSingle,
    perRequest,
    endpoints,
    targets,
  };
}

function printHttpTables(
  endpoints: Partial<Record<EndpointName, EndpointResult>>,
  options: HttpOptions,
): void {
  const rows = Object.entries(endpoints) as [EndpointName, EndpointResult][];
  printTable(
    `HTTP: autocannon, ${options.durationSec} s per endpoint (latency ms, all responses)`,
    ['endpoint', 'conns', 'req/s', 'p50', 'p90', 'p99', 'max', 'requests', 'non-2xx'],
    rows.map(([name, result]) => [
      name,
      result.connections,
      result.load.requestsPerSecond,
      result.load.latencyMs.p50,
      result.load.latencyMs.p90,
      result.load.latencyMs.p99,
      result.load.latencyMs.max,
      result.load.requests,
      result.load.non2xx,
    ]),
  );
  printTable(
    'HTTP: time beyond DynamoDB, two ways (ms): p50 − calls × isolated floor p50; mean − DynamoDB time measured in the run',
    [
      'endpoint',
      'calls/req r/p/u/t',
      'p50',
      'floor model',
      'p50 beyond',
      'mean',
      'in-run DDB',
      'mean beyond',
    ],
    rows.map(([name, result]) => {
      const calls = result.callsPerRequestUnderLoad;
      return [
        name,
        `${calls.read}/${calls.put}/${calls.update}/${calls.transact}`,
        result.load.latencyMs.p50,
        result.dynamoFloorMs,
        result.beyondDynamoP50Ms,
        result.load.latencyMs.mean,
        result.dynamoMsPerRequestInSitu,
        result.beyondDynamoMeanMsInSitu,
      ];
    }),
  );
  printTable(
    `HTTP: CPU per request (ms) — the service, DynamoDB Local (java) and the load generator share ${cores} cores; ` +
      "max req/s = cores ÷ total; mean floor = connections ÷ max req/s (Little's law)",
    [
      'endpoint',
      'service',
      'DynamoDB Local',
      'load gen',
      'total',
      'max req/s',
      'req/s',
      'mean floor',
      'mean',
    ],
    rows.map(([name, result]) => [
      name,
      result.cpuMsPerRequest.service,
      result.cpuMsPerRequest.dynamoDbLocal ?? Number.NaN,
      result.cpuMsPerRequest.loadGenerator,
      result.cpuMsPerRequest.total ?? Number.NaN,
      result.capacity?.maxRequestsPerSecond ?? Number.NaN,
      result.load.requestsPerSecond,
      result.capacity?.meanLatencyFloorMs ?? Number.NaN,
      result.load.latencyMs.mean,
    ]),
  );
  for (const [name, result] of rows) {
    const single = Object.entries(result.callsSingleRequest)
      .map(([command, count]) => `${command}×${count}`)
      .join(', ');
    console.log(`  ${name}: one warm request = ${single}${result.note ? `; ${result.note}` : ''}`);
  }
}
