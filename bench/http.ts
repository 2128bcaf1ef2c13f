import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createApiKey } from '../lib/admin/api-keys.js';
import type { Role } from '../lib/routes.js';
import { flattenedReceipt, newHashedPan } from '../test/support/fixtures.js';
import { startLocalStack, type LocalStack } from '../local/stack.js';
import {
  DynamoCallCounter,
  callKinds,
  javaChildPid,
  measureDynamoFloor,
  processCpuMs,
  type CallKind,
  type FloorStats,
} from './lib/dynamo-probe.js';
import {
  RECEIPT_ID_PLACEHOLDER,
  TRANSACTION_ID_PLACEHOLDER,
  type LoadOutcome,
  type LoadSpec,
} from './lib/load-spec.js';
import { benchReceipt } from './lib/receipt.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { round } from './lib/stats.js';

/**
 * The whole service in-process (DynamoDB Local, gateway sandbox, HTTP adapter) under autocannon at a
 * fixed concurrency, one endpoint at a time. Users, envelopes and tokens are made first through the
 * API itself; the load generator runs in a child process so it does not share the service's event loop.
 */

export interface HttpOptions {
  connections: number;
  durationSec: number;
  /** Registered users the load rotates over (grant-access allows 5 live tokens per user). */
  users: number;
  floorRounds: number;
  floorSliceMs: number;
}

type EndpointName =
  | 'receipts/encrypt'
  | 'receipts/encrypt @1 connection'
  | 'receipts/encrypt @4 connections'
  | 'receipts/decrypt'
  | 'keys/grant-access'
  | 'payments/gateway_a/create';

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
    /** All three: what one request costs the machine. */
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
  endpoints: Partial<Record<EndpointName, EndpointResult>>;
  targets: TargetCheck[];
}

interface User {
  userId: string;
  keyId: string;
  privateKey: string;
  hashedPan: string;
}

// -------------------------------------------------------------------------------------------------
// A tiny JSON client for setup (not timed).

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null;

function text(record: Json, key: string): string {
  const value = record[key];
  if (typeof value !== 'string')
    throw new Error(`expected a string ${key} in ${JSON.stringify(record).slice(0, 200)}`);
  return value;
}

async function post(stack: LocalStack, path: string, apiKey: string, body?: unknown): Promise<Json> {
  const response = await fetch(`${stack.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const parsed: unknown = await response.json();
  if (response.status !== 200 || !isRecord(parsed) || !isRecord(parsed.data)) {
    throw new Error(
      `setup: POST ${path} answered ${response.status}: ${JSON.stringify(parsed).slice(0, 300)}`,
    );
  }
  return parsed.data;
}

/** Runs `task` over `items` with at most `limit` in flight. */
async function inPool<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// -------------------------------------------------------------------------------------------------
// Request bodies. Placeholders become fresh UUIDs per request in the load generator.

function encryptBody(user: User): unknown {
  const receipt = benchReceipt();
  return {
    receipt: {
      ...receipt,
      receiptId: RECEIPT_ID_PLACEHOLDER,
      transaction: { ...receipt.transaction, transactionId: TRANSACTION_ID_PLACEHOLDER },
    },
    recipientIdentifier: { type: 'email', value: 'cardholder@example.com' },
    recipientHashedPan: user.hashedPan,
  };
}

function paymentBody(user: User): unknown {
  const receipt = flattenedReceipt({
    receiptId: RECEIPT_ID_PLACEHOLDER,
    transactionId: TRANSACTION_ID_PLACEHOLDER,
    recipientHashedPan: user.hashedPan,
  });
  return { ...receipt, amount: receipt.totalAmount };
}

const withIds = (template: unknown): unknown =>
  JSON.parse(
    JSON.stringify(template)
      .replaceAll(RECEIPT_ID_PLACEHOLDER, randomUUID())
      .replaceAll(TRANSACTION_ID_PLACEHOLDER, randomUUID()),
  );

// -------------------------------------------------------------------------------------------------

const cores = cpus().length;

const loadScript = fileURLToPath(new URL('./http-load.ts', import.meta.url));

/** Starts the load generator (tsx, same Node binary) and waits for it, killing it if it overruns. */
async function runLoad(spec: LoadSpec, workDir: string): Promise<LoadOutcome> {
  const id = randomUUID();
  const specPath = join(workDir, `${id}.spec.json`);
  const outcomePath = join(workDir, `${id}.outcome.json`);
  await writeFile(specPath, JSON.stringify(spec));
  const child = spawn(process.execPath, ['--import', 'tsx', loadScript, specPath, outcomePath], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const limitMs = (spec.durationSec + 60) * 1000;
  const killer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(killer);
  if (code !== 0) throw new Error(`load generator exited with ${code}`);
  return JSON.parse(await readFile(outcomePath, 'utf8')) as LoadOutcome;
}

export async function runHttpBench(options: HttpOptions): Promise<HttpResult> {
  const workDir = await mkdtemp(join(tmpdir(), 'receipt-bench-http-'));
  // WARN: the per-request INFO access line would otherwise flood the bench output (and cost a write each).
  const stack = await startLocalStack({ inMemory: true, port: 0, logLevel: 'WARN' });
  try {
    return await runAgainst(stack, options, workDir);
  } finally {
    await stack.close();
    await rm(workDir, { recursive: true, force: true });
  }
}

async function runAgainst(stack: LocalStack, options: HttpOptions, workDir: string): Promise<HttpResult> {
  if (!stack.url.startsWith('http://127.0.0.1:'))
    throw new Error(`the stack is not on loopback: ${stack.url}`);
  const admin = { repository: stack.deps.repos.apiKeys, now: () => new Date() };
  const key = async (name: string, roles: Role[]) =>
    (await createApiKey(admin, { name, roles, tier: 'enterprise' })).apiKey;
  const issuerKey = await key('bench-issuer', ['issuer']);
  // One merchant key per merchant endpoint, so neither run eats into the other's per-minute budget.
  const encryptKey = await key('bench-merchant-encrypt', ['merchant']);
  const paymentKey = await key('bench-merchant-payments', ['merchant']);
  const counter = new DynamoCallCounter(stack.deps.dynamo.doc);
  const javaPid = javaChildPid();

  // ---- Setup: users through generate-keys + register (key generation runs on the 4-thread pool).
  const setupStart = performance.now();
  const users = await inPool(Array.from({ length: options.users }), 4, async (): Promise<User> => {
    const pair = await post(stack, '/api/v1/onboarding/generate-keys', issuerKey);
    const hashedPan = newHashedPan();
    const registered = await post(stack, '/api/v1/onboarding/register', issuerKey, {
      hashedPan,
      publicKey: text(pair, 'publicKey'),
      keyId: text(pair, 'keyId'),
    });
    return {
      userId: text(registered, 'userId'),
      keyId: text(pair, 'keyId'),
      privateKey: text(pair, 'privateKey'),
      hashedPan,
    };
  });
  // One stored envelope per user, for the decrypt run.
  const envelopes = await inPool(users, 8, (user) =>
    post(stack, '/api/v1/receipts/encrypt', encryptKey, withIds(encryptBody(user))),
  );
  const setupSeconds = (performance.now() - setupStart) / 1000;
  console.log(
    `  setup: ${users.length} users onboarded and one envelope each in ${setupSeconds.toFixed(1)} s`,
  );

  // ---- DynamoDB floor, same client, at the load's concurrency and at one (for the one-connection run).
  const readKey = { pk: `USER#${users[0]?.userId ?? 'none'}` };
  const floorAt = (concurrency: number) =>
    measureDynamoFloor(stack.deps.dynamo.doc, stack.config.tables, readKey, {
      concurrency,
      rounds: options.floorRounds,
      sliceMs: options.floorSliceMs,
    });
  const dynamoFloor = await floorAt(options.connections);
  const dynamoFloorSingle = await floorAt(1);
  const floorFor = (connections: number) => (connections === 1 ? dynamoFloorSingle : dynamoFloor);
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

  const endpoints: Partial<Record<EndpointName, EndpointResult>> = {};

  async function measureEndpoint(
    name: EndpointName,
    path: string,
    apiKey: string,
    bodies: unknown[],
    oneRequestBody: () => unknown,
    extra: { maxRequests?: number; note?: string; connections?: number } = {},
  ): Promise<void> {
    const connections = extra.connections ?? options.connections;
    // Warm-up: JIT, lazily loaded SDKs (the payment gateway's), the API-key cache.
    for (let i = 0; i < 3; i++) await post(stack, path, apiKey, oneRequestBody());
    counter.reset();
    await post(stack, path, apiKey, oneRequestBody());
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
      callKinds.reduce(
        (sum, kind) => sum + callsPerRequestUnderLoad[kind] * floorFor(connections)[kind].p50Ms,
        0,
      ),
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
      `  ${name}: ${load.requests} requests in ${load.durationSec} s (${status})${load.firstErrorBody ? `; first error ${load.firstErrorBody}` : ''}`,
    );
  }

  // ---- receipts/encrypt: nested form, to a registered user's hashedPan, a new receiptId every request.
  // The same endpoint at the target's concurrency, then with one connection (the latency of a request
  // nothing queues behind, as a Lambda instance serves) and four (where the cores fill up).
  const encryptRuns: [EndpointName, number, string | undefined][] = [
    ['receipts/encrypt', options.connections, undefined],
    ['receipts/encrypt @1 connection', 1, 'one connection: no queueing in the service or in DynamoDB Local'],
    ['receipts/encrypt @4 connections', 4, 'four connections: between no queueing and the target load'],
  ];
  for (const [name, connections, note] of encryptRuns) {
    await measureEndpoint(
      name,
      '/api/v1/receipts/encrypt',
      encryptKey,
      users.map(encryptBody),
      () => withIds(encryptBody(users[0] as User)),
      { connections, ...(note ? { note } : {}) },
    );
  }

  // ---- receipts/decrypt: tokens are granted now, so they are live (≤ 180 s) for the run; one slot each.
  const tokens = await inPool(users, 8, async (user) =>
    text(
      await post(stack, '/api/v1/keys/grant-access', issuerKey, { userId: user.userId, keyId: user.keyId }),
      'tokenId',
    ),
  );
  const decryptBodies = users.map((user, index) => ({
    envelope: envelopes[index],
    accessTokenId: tokens[index],
    privateKey: user.privateKey,
  }));
  await measureEndpoint(
    'receipts/decrypt',
    '/api/v1/receipts/decrypt',
    issuerKey,
    decryptBodies,
    () => decryptBodies[0],
  );

  // ---- keys/grant-access: round-robin over every user. Each user already holds the decrypt token and
  // may lend one slot to warm-up, so the run is capped at 3 grants per user: every grant can succeed.
  // Three warm-ups and the counted request go to four different users, one grant each.
  const warmUpUsers = users.slice(0, 4);
  let warmUp = 0;
  await measureEndpoint(
    'keys/grant-access',
    '/api/v1/keys/grant-access',
    issuerKey,
    users.map((user) => ({ userId: user.userId, keyId: user.keyId })),
    () => {
      const user = warmUpUsers[warmUp++ % warmUpUsers.length] as User;
      return { userId: user.userId, keyId: user.keyId };
    },
    {
      maxRequests: users.length * 3,
      note: `capped at ${users.length * 3} grants (3 per user over ${users.length} users) so no grant meets a user who already holds 5 live tokens`,
    },
  );

  // ---- payments/gateway_a/create: flattened receipt + amount, a new receiptId and transactionId each time.
  await measureEndpoint(
    'payments/gateway_a/create',
    '/api/v1/payments/gateway_a/create',
    paymentKey,
    users.map(paymentBody),
    () => withIds(paymentBody(users[0] as User)),
    { note: 'includes the in-process gateway sandbox call (HTTP over loopback through the stripe SDK)' },
  );

  printHttpTables(endpoints, options);
  const encrypt = endpoints['receipts/encrypt'];
  const targets: TargetCheck[] = [
    {
      section: 'http',
      target: `encrypt p99 < 50 ms at ${options.connections} connections`,
      measured: encrypt
        ? `p99 ${encrypt.load.latencyMs.p99} ms (p50 ${encrypt.load.latencyMs.p50} ms, ${encrypt.load.requestsPerSecond} req/s, ${encrypt.load.non2xx} non-2xx)` +
          (encrypt.capacity
            ? `; ${encrypt.cpuMsPerRequest.total} ms CPU/request on ${cores} cores → mean ≥ ${encrypt.capacity.meanLatencyFloorMs} ms`
            : '')
        : 'not run',
      met: encrypt ? encrypt.load.latencyMs.p99 < 50 && encrypt.load.non2xx === 0 : null,
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
