import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { APIGatewayProxyEvent, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { CreateTableCommand, DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { routes } from '../functions/routes.js';
import { openEnvelope } from '../lib/crypto/envelope.js';
import { receiptTableKey } from '../lib/db/receipts.js';
import { parsePrivateKey, parsePublicKey } from '../lib/crypto/keys.js';
import { tableDefinitions } from '../lib/kernel/tables.js';
import { toDigitalReceipt, type FlattenedReceipt } from '../lib/receipts/flattened.js';
import type { DigitalReceipt } from '../lib/receipts/schemas.js';
import { sealReceiptEnvelope } from '../lib/receipts/seal.js';
import { DEFAULT_MEMORY_MB } from '../infra/service-function.js';
import {
  authorizeEdge,
  formatKeyedRoutes,
  parseKeyedRoutes,
  type EdgeAuthorizerDeps,
} from '../lib/api-keys/edge-authorizer.js';
import { rateGroupOf, type Role } from '../lib/kernel/route.js';
import { createApiKey } from '../scripts/admin/api-keys.js';
import { lambdaContext, loadRoutes } from '../local/server.js';
import type { LocalStack } from '../local/stack.js';
import { edgeAuthorizerFunction } from '../functions/platform/edge-authorizer/function.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { SkippingClock, withBenchStack } from './lib/bench-stack.js';
import {
  encryptBody,
  inPool,
  isRecord,
  onboardUser,
  paymentBody,
  post,
  text,
  withIds,
  type User,
} from './lib/setup.js';
import { median, round } from './lib/stats.js';

/**
 * What one million receipts cost in AWS, from figures measured here: each function's handler is run
 * in this process on the local stack (the Lambda's own code, without the local HTTP adapter), and
 * for every operation the bench records its CPU time, its DynamoDB calls and the capacity units
 * DynamoDB itself reports for them (ReturnConsumedCapacity), the log bytes it writes and the bytes it
 * answers. bench/prices.json holds the list prices (with their date and region) and the assumptions
 * that turn local figures into AWS ones (DynamoDB and provider latency, CPU share by memory size).
 */

export interface CostOptions {
  /** Measured invocations per operation. */
  operations: number;
}

interface Price {
  value: number;
  unit: string;
  verified: boolean;
}
interface Assumption {
  value: number;
  why: string;
}
interface PriceTable {
  region: string;
  date: string;
  source: string;
  prices: Record<string, Price>;
  assumptions: Record<string, Assumption>;
}

type OperationName =
  | 'encrypt'
  | 'create-payment'
  | 'grant-access'
  | 'decrypt-payment'
  | 'get-receipt'
  | 'webhook-dispatch'
  | 'edge-authorizer';

interface OperationMeasure {
  /** The function that runs it (its memory size decides its CPU share). */
  functionName: string;
  memoryMb: number;
  invocations: number;
  cpuMsPerOp: number;
  wallMsP50: number;
  dynamoCallsPerOp: number;
  readUnitsPerOp: number;
  writeUnitsPerOp: number;
  logBytesPerOp: number;
  responseBytesPerOp: number;
  /** Calls to a payment provider (the sandbox here): their latency is an assumption. */
  gatewayCallsPerOp: number;
  /** Bytes of the receipt items it stores (an approximation from their JSON), for storage. */
  storedBytesPerOp: number;
  /** API Gateway requests it is (the edge authorizer runs once for each). */
  apiRequests: number;
  /** Read and write units per operation by table and by index. */
  unitsByTarget: UnitsByTarget;
  /**
   * CPU of a bare handler doing the same job (the floor's compute): the request's JSON parsed, the
   * receipt sealed or opened with lib/crypto, the answer serialised; nothing else.
   */
  bareCpuMsPerOp: number;
}

interface LineItem {
  item: string;
  usdPerMillion: number;
}

interface MixCost {
  operations: OperationName[];
  lines: LineItem[];
  totalPerMillion: number;
  floor: { lines: LineItem[]; totalPerMillion: number };
  /** totalPerMillion ÷ the floor's. */
  ratio: number;
}

/**
 * The floor's durable writes, as DynamoDB Local reports them: the sealed receipt put once (plain,
 * conditional, into a table with no index and no stream) and its audit record.
 */
interface FloorWrites {
  receiptWriteUnits: number;
  auditWriteUnits: number;
}

/** Each mix at most twice its floor (DECISIONS, Round 4, "Cost"). */
export const COST_FLOOR_RATIO_TARGET = 2;

export interface CostResult {
  options: CostOptions;
  prices: PriceTable;
  operations: Record<OperationName, OperationMeasure>;
  floorWrites: Record<string, FloorWrites>;
  mixes: Record<string, MixCost>;
  targets: TargetCheck[];
}

/** Units by where DynamoDB spent them: `<table>` or `<table>/<index>` (the stack's prefix left off). */
export type UnitsByTarget = Record<string, { read: number; write: number }>;

const READ_COMMAND = /^(Get|BatchGet|Query|Scan|TransactGet)/;

/** Adds one response's ConsumedCapacity (ReturnConsumedCapacity INDEXES) to `into`, by table and index. */
export function addConsumed(into: UnitsByTarget, consumed: unknown, read: boolean, prefix: string): number {
  let total = 0;
  const add = (target: string, units: unknown) => {
    if (typeof units !== 'number' || units === 0) return;
    const slot = (into[target] ??= { read: 0, write: 0 });
    if (read) slot.read += units;
    else slot.write += units;
  };
  for (const entry of Array.isArray(consumed) ? consumed : consumed ? [consumed] : []) {
    if (!isRecord(entry)) continue;
    const table = String(entry.TableName ?? '?').replace(prefix, '');
    const units = typeof entry.CapacityUnits === 'number' ? entry.CapacityUnits : 0;
    total += units;
    const indexes = {
      ...(entry.GlobalSecondaryIndexes as object),
      ...(entry.LocalSecondaryIndexes as object),
    };
    let onIndexes = 0;
    for (const [index, spent] of Object.entries(indexes)) {
      const indexUnits = isRecord(spent) ? spent.CapacityUnits : undefined;
      add(`${table}/${index}`, indexUnits);
      onIndexes += typeof indexUnits === 'number' ? indexUnits : 0;
    }
    // The table's own share: reported as Table, or what the indexes leave of the total.
    const own = isRecord(entry.Table) ? entry.Table.CapacityUnits : units - onIndexes;
    add(table, own);
  }
  return total;
}

/**
 * Reads and writes DynamoDB reports for each call (ReturnConsumedCapacity INDEXES: by table and by
 * index), with the receipt items' sizes.
 */
class CapacityMeter {
  calls = 0;
  readUnits = 0;
  writeUnits = 0;
  storedBytes = 0;
  byTarget: UnitsByTarget = {};

  constructor(stack: LocalStack) {
    const prefix = (stack.config.tables.receipts ?? '').slice(0, -tableDefinitions.receipts.name.length);
    // What a receipt keeps stored for its retention: its item and its evidence entries, written alone
    // or (since the evidence index) together in one transaction.
    const keptTables = new Set([stack.config.tables.receipts, stack.config.tables.evidence]);
    const keptBytes = (put: unknown): number =>
      isRecord(put) && keptTables.has(put.TableName as string) && isRecord(put.Item)
        ? // A set (a receipt's evidenceIds) counted as its strings: JSON.stringify alone would give {}.
          Buffer.byteLength(
            JSON.stringify(put.Item, (_key, value: unknown) => (value instanceof Set ? [...value] : value)),
          )
        : 0;
    stack.deps.dynamo.doc.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as Record<string, unknown>;
        input.ReturnConsumedCapacity = 'INDEXES';
        this.storedBytes += keptBytes(input);
        if (Array.isArray(input.TransactItems))
          for (const item of input.TransactItems) if (isRecord(item)) this.storedBytes += keptBytes(item.Put);
        const output = await next(args);
        this.calls += 1;
        const consumed = (output.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
        const read = READ_COMMAND.test(context.commandName ?? '');
        const units = addConsumed(this.byTarget, consumed, read, prefix);
        if (read) this.readUnits += units;
        else this.writeUnits += units;
        return output;
      },
      { step: 'initialize', name: 'benchCapacityMeter' },
    );
  }

  reset(): void {
    this.calls = 0;
    this.readUnits = 0;
    this.writeUnits = 0;
    this.storedBytes = 0;
    this.byTarget = {};
  }
}

/** Counts what the functions log (one JSON line per record) and keeps it off the bench's output. */
class LogMeter {
  bytes = 0;
  private readonly original = process.stdout.write.bind(process.stdout);
  private capturing = false;

  start(): void {
    this.bytes = 0;
    this.capturing = true;
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      if (!this.capturing) return this.original(chunk, ...(rest as []));
      this.bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
      return true;
    }) as typeof process.stdout.write;
  }

  stop(): void {
    this.capturing = false;
    process.stdout.write = this.original;
  }
}

/** What API Gateway's proxy integration hands a function. */
function proxyEvent(
  method: string,
  path: string,
  resource: string,
  apiKey: string,
  body: unknown,
  pathParameters: Record<string, string> | null = null,
): APIGatewayProxyEvent {
  const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
  return {
    resource,
    path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters,
    stageVariables: null,
    body: body === undefined ? null : JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: {
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      identity: { sourceIp: '203.0.113.10' },
    } as APIGatewayProxyEvent['requestContext'],
  };
}

const memoryOf = (name: string): number =>
  (routes.find((route) => route.name === name)?.memoryMb ?? DEFAULT_MEMORY_MB) as number;

async function startReceiver(): Promise<{
  url: string;
  server: Server;
  received: () => number;
  /** The receiptIds the deliveries named. */
  receiptIds: Set<string>;
}> {
  let received = 0;
  const receiptIds = new Set<string>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received += 1;
      const id = /"receiptId":"([^"]+)"/.exec(Buffer.concat(chunks).toString('utf8'))?.[1];
      if (id) receiptIds.add(id);
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    server,
    received: () => received,
    receiptIds,
  };
}

const waitFor = async (check: () => boolean, maxMs: number): Promise<void> => {
  const deadline = performance.now() + maxMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error('cost bench: timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

export async function runCostBench(options: CostOptions): Promise<CostResult> {
  const prices = JSON.parse(await readFile(new URL('./prices.json', import.meta.url), 'utf8')) as PriceTable;
  const receiver = await startReceiver();
  try {
    return await withBenchStack('INFO', (stack, clock) =>
      measureAndPrice(stack, clock, receiver, prices, options),
    );
  } finally {
    await new Promise<void>((resolve) => receiver.server.close(() => resolve()));
  }
}

async function measureAndPrice(
  stack: LocalStack,
  clock: SkippingClock,
  receiver: Awaited<ReturnType<typeof startReceiver>>,
  prices: PriceTable,
  options: CostOptions,
): Promise<CostResult> {
  const n = options.operations;
  const key = async (roles: Role[]) =>
    createApiKey(
      { repository: stack.deps.repos.apiKeys, now: () => clock.now() },
      { name: `cost ${roles.join('+')}`, roles, tier: 'enterprise' },
    );
  const issuer = (await key(['issuer'])).apiKey;
  const merchantKey = await key(['merchant']);
  const merchant = merchantKey.apiKey;
  const paymentsKey = await key(['merchant']);
  const payments = paymentsKey.apiKey;
  const logs = new LogMeter();
  // Setup through the API, its log lines kept off the output.
  logs.start();
  const users = await inPool(Array.from({ length: Math.max(4, Math.ceil(n / 3)) }), 4, () =>
    onboardUser(stack.url, issuer),
  ).finally(() => logs.stop());
  logs.start();
  const hook = await fetch(`${stack.url}/api/v1/webhooks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': issuer },
    body: JSON.stringify({ url: receiver.url, events: ['receipt.available'] }),
  }).finally(() => logs.stop());
  if (hook.status !== 201) throw new Error(`cost bench: webhook registration answered ${hook.status}`);

  const handlers = new Map(
    (await loadRoutes(stack.deps)).map((loaded) => [loaded.route.name, loaded.handler] as const),
  );
  const meter = new CapacityMeter(stack);
  // The dispatcher (the receipts stream's Lambda in AWS) is metered on its own (measureDispatch):
  // stopped here, so none of its polling or delivery is counted in another operation.
  await stack.dispatcher.stop();
  await stack.deliveryQueue.drain();
  await idleCheck(meter);
  const publicKeys = new Map(users.map((user) => [user.userId, parsePublicKey(user.publicKey)]));
  const privateKeys = new Map(users.map((user) => [user.userId, parsePrivateKey(user.privateKey)]));
  const recipientOf = (user: User) => ({ keyId: user.keyId, publicKey: publicKeys.get(user.userId)! });
  const nextUser = (() => {
    let index = 0;
    return () => users[index++ % users.length] as User;
  })();

  /** Runs one operation `n` times, one after another, as one Lambda instance would. */
  async function measure(
    name: OperationName,
    functionName: string,
    invoke: (index: number) => Promise<{ statusCode: number; body: string }>,
    extra: Pick<OperationMeasure, 'gatewayCallsPerOp' | 'apiRequests'>,
    bare: (index: number) => unknown = () => undefined,
  ): Promise<OperationMeasure> {
    // Warm-up (JIT, caches, the payment SDK's lazy load), its log lines kept off the output too.
    logs.start();
    try {
      for (let i = 0; i < 3; i++) await invoke(-1 - i);
    } finally {
      logs.stop();
    }
    meter.reset();
    logs.start();
    const walls: number[] = [];
    let responseBytes = 0;
    const cpu = process.cpuUsage();
    try {
      for (let i = 0; i < n; i++) {
        const start = performance.now();
        const result = await invoke(i);
        walls.push(performance.now() - start);
        if (result.statusCode >= 300)
          throw new Error(`cost bench: ${name} answered ${result.statusCode}: ${result.body.slice(0, 200)}`);
        responseBytes += Buffer.byteLength(result.body);
      }
    } finally {
      logs.stop();
    }
    const used = process.cpuUsage(cpu);
    const unitsByTarget = perOperation(meter.byTarget, n);
    const bareCpu = process.cpuUsage();
    for (let i = 0; i < n; i++) bare(i);
    const bareUsed = process.cpuUsage(bareCpu);
    return {
      functionName,
      unitsByTarget,
      bareCpuMsPerOp: round((bareUsed.user + bareUsed.system) / 1000 / n, 3),
      memoryMb: memoryOf(functionName),
      invocations: n,
      cpuMsPerOp: round((used.user + used.system) / 1000 / n, 3),
      wallMsP50: round(median(walls), 2),
      dynamoCallsPerOp: round(meter.calls / n, 2),
      readUnitsPerOp: round(meter.readUnits / n, 3),
      writeUnitsPerOp: round(meter.writeUnits / n, 3),
      logBytesPerOp: round(logs.bytes / n, 0),
      responseBytesPerOp: round(responseBytes / n, 0),
      storedBytesPerOp: round(meter.storedBytes / n, 0),
      ...extra,
    };
  }

  const call = async (
    routeName: string,
    event: APIGatewayProxyEvent,
  ): Promise<{ statusCode: number; body: string }> => {
    const handler = handlers.get(routeName);
    if (!handler) throw new Error(`cost bench: no route ${routeName}`);
    const result = await handler(event, lambdaContext(routeName, 30));
    return { statusCode: result.statusCode, body: result.body };
  };
  const api = { gatewayCallsPerOp: 0, apiRequests: 1 };

  const operations = {} as Record<OperationName, OperationMeasure>;
  const encrypted: { receiptId: string; envelope: unknown; user: User }[] = [];
  operations.encrypt = await measure(
    'encrypt',
    'encrypt-receipt',
    async () => {
      const user = nextUser();
      const result = await call(
        'encrypt-receipt',
        proxyEvent(
          'POST',
          '/api/v1/receipts/encrypt',
          '/api/v1/receipts/encrypt',
          merchant,
          withIds(encryptBody(user)),
        ),
      );
      const parsed: unknown = JSON.parse(result.body);
      if (isRecord(parsed) && isRecord(parsed.data) && typeof parsed.data.receiptId === 'string')
        encrypted.push({ receiptId: parsed.data.receiptId, envelope: parsed.data, user });
      return result;
    },
    api,
    (index) => {
      const user = users[index % users.length] as User;
      const body = JSON.parse(JSON.stringify(withIds(encryptBody(user)))) as { receipt: DigitalReceipt };
      return JSON.stringify({ data: sealReceiptEnvelope(body.receipt, recipientOf(user)) });
    },
  );

  const created: { paymentId: string; receiptId: string; user: User }[] = [];
  operations['create-payment'] = await measure(
    'create-payment',
    'create-payment',
    async () => {
      const user = nextUser();
      const result = await call(
        'create-payment',
        proxyEvent(
          'POST',
          '/api/v1/payments/gateway_a/create',
          '/api/v1/payments/{gateway}/create',
          payments,
          withIds(paymentBody(user)),
          { gateway: 'gateway_a' },
        ),
      );
      const parsed: unknown = JSON.parse(result.body);
      if (isRecord(parsed) && isRecord(parsed.data) && typeof parsed.data.paymentId === 'string')
        created.push({
          paymentId: parsed.data.paymentId,
          receiptId: isRecord(parsed.data.receiptMetadata)
            ? String(parsed.data.receiptMetadata.receiptId)
            : '',
          user,
        });
      return result;
    },
    { gatewayCallsPerOp: 1, apiRequests: 1 },
    (index) => {
      const user = users[index % users.length] as User;
      const body = JSON.parse(JSON.stringify(withIds(paymentBody(user)))) as FlattenedReceipt;
      return JSON.stringify({ data: sealReceiptEnvelope(toDigitalReceipt(body), recipientOf(user)) });
    },
  );

  // Every token slot free, and at most three grants per user.
  clock.skip(stack.config.tokenTtlSeconds * 1000 + 1000);
  const grantFor = (user: User) =>
    call(
      'grant-access',
      proxyEvent('POST', '/api/v1/keys/grant-access', '/api/v1/keys/grant-access', issuer, {
        userId: user.userId,
        keyId: user.keyId,
      }),
    );
  operations['grant-access'] = await measure(
    'grant-access',
    'grant-access',
    () => grantFor(nextUser()),
    api,
    () => JSON.stringify({ data: { tokenId: randomUUID() } }),
  );

  // Tokens for the decrypts, granted outside the measurement.
  clock.skip(stack.config.tokenTtlSeconds * 1000 + 1000);
  const tokens = new Map<string, string>();
  logs.start();
  try {
    for (const user of users) {
      const granted: unknown = JSON.parse((await grantFor(user)).body);
      if (isRecord(granted) && isRecord(granted.data)) tokens.set(user.userId, text(granted.data, 'tokenId'));
    }
  } finally {
    logs.stop();
  }
  operations['decrypt-payment'] = await measure(
    'decrypt-payment',
    'decrypt-payment',
    (index) => {
      const payment = created[(index + created.length) % created.length] as (typeof created)[number];
      return call(
        'decrypt-payment',
        proxyEvent('POST', '/api/v1/payments/decrypt', '/api/v1/payments/decrypt', issuer, {
          paymentId: payment.paymentId,
          gateway: 'gateway_a',
          accessTokenId: tokens.get(payment.user.userId),
          privateKey: payment.user.privateKey,
        }),
      );
    },
    { gatewayCallsPerOp: 1, apiRequests: 1 },
    (index) => {
      const { envelope, user } = encrypted[index % encrypted.length]!;
      return JSON.stringify({ data: openEnvelope(envelope, privateKeys.get(user.userId)!).toString('utf8') });
    },
  );

  operations['get-receipt'] = await measure(
    'get-receipt',
    'get-receipt',
    (index) => {
      const { receiptId } = encrypted[(index + encrypted.length) % encrypted.length] as { receiptId: string };
      return call(
        'get-receipt',
        proxyEvent(
          'GET',
          `/api/v1/receipts/${receiptId}`,
          '/api/v1/receipts/{receiptId}',
          issuer,
          undefined,
          {
            receiptId,
          },
        ),
      );
    },
    api,
    (index) => JSON.stringify({ data: encrypted[index % encrypted.length]!.envelope }),
  );

  // What the stopped dispatcher has to deliver before its own measurement: every receipt stored since.
  const backlog = [...encrypted.map((entry) => entry.receiptId), ...created.map((entry) => entry.receiptId)];
  operations['webhook-dispatch'] = await measureDispatch(
    stack,
    receiver,
    meter,
    logs,
    merchant,
    users,
    n,
    backlog,
  );

  // The edge authorizer, once per API request: the same code with the same tables.
  const authorizer: EdgeAuthorizerDeps = {
    authenticator: stack.deps.authenticator,
    logger: stack.deps.logger,
    rates: {
      limiter: stack.deps.rateLimiter,
      tiers: stack.deps.tiers,
      anonymousRequestsPerMinute: stack.config.anonymousRequestsPerMinute,
      keyedRoutes: parseKeyedRoutes(
        formatKeyedRoutes(
          routes
            .filter((route) => route.apiKeyRequired)
            .map((route) => ({ method: route.method, path: route.path, group: rateGroupOf(route) })),
        ),
      ),
    },
  };
  operations['edge-authorizer'] = await measure(
    'edge-authorizer',
    edgeAuthorizerFunction.name,
    async () => {
      const answer = await authorizeEdge(
        {
          type: 'REQUEST',
          methodArn: 'arn:aws:execute-api:us-east-1:000000000000:api/prod/POST/api/v1/receipts/encrypt',
          resource: '/api/v1/receipts/encrypt',
          path: '/api/v1/receipts/encrypt',
          httpMethod: 'POST',
          headers: { 'X-API-Key': merchant },
          requestContext: {
            requestId: randomUUID(),
            requestTimeEpoch: Date.now(),
            identity: { sourceIp: '203.0.113.10' },
          },
        } as unknown as APIGatewayRequestAuthorizerEvent,
        authorizer,
      );
      return { statusCode: answer.usageIdentifierKey ? 200 : 401, body: '' };
    },
    { gatewayCallsPerOp: 0, apiRequests: 0 },
  );
  operations['edge-authorizer'].memoryMb = edgeAuthorizerFunction.memoryMb ?? DEFAULT_MEMORY_MB;

  const mixes = {
    encrypt: ['encrypt'],
    'payment create + decrypt': ['create-payment', 'grant-access', 'decrypt-payment'],
    'device flow with webhook': ['encrypt', 'webhook-dispatch', 'get-receipt'],
  } satisfies Record<string, OperationName[]>;
  // The floor's writes: each mix's sealed receipt (as the service left it) put once, and its audit record.
  const floorWrites = {
    encrypt: await measureFloorWrites(stack, merchantKey.record.clientId, encrypted),
    payment: await measureFloorWrites(stack, paymentsKey.record.clientId, created),
  };
  const floorOf: Record<keyof typeof mixes, FloorWrites> = {
    encrypt: floorWrites.encrypt,
    'payment create + decrypt': floorWrites.payment,
    'device flow with webhook': floorWrites.encrypt,
  };
  const total = (lines: LineItem[]) =>
    round(
      lines.reduce((sum, line) => sum + line.usdPerMillion, 0),
      2,
    );
  const priced = Object.fromEntries(
    (Object.entries(mixes) as [keyof typeof mixes, OperationName[]][]).map(([mix, names]) => {
      const lines = priceMix(names, operations, prices);
      const floorLines = priceFloor(names, operations, floorOf[mix], prices);
      const totalPerMillion = total(lines);
      const floor = { lines: floorLines, totalPerMillion: total(floorLines) };
      return [
        mix,
        {
          operations: names,
          lines,
          totalPerMillion,
          floor,
          ratio: round(totalPerMillion / floor.totalPerMillion, 2),
        },
      ];
    }),
  ) as Record<string, MixCost>;
  printCost(operations, priced, prices, n);
  return {
    options,
    prices,
    operations,
    floorWrites,
    mixes: priced,
    targets: Object.entries(priced).map(([mix, entry]) => ({
      section: 'cost',
      target: `one million receipts, ${mix}: ≤ ${COST_FLOOR_RATIO_TARGET}× its floor (${prices.region}, prices of ${prices.date})`,
      measured: `$${entry.totalPerMillion.toFixed(2)} ÷ $${entry.floor.totalPerMillion.toFixed(2)} = ${entry.ratio}×`,
      met: entry.ratio <= COST_FLOOR_RATIO_TARGET,
    })),
  };
}

/** Units per operation from a run's totals. */
function perOperation(totals: UnitsByTarget, n: number): UnitsByTarget {
  return Object.fromEntries(
    Object.entries(totals).map(([target, units]) => [
      target,
      { read: round(units.read / n, 3), write: round(units.write / n, 3) },
    ]),
  );
}

/** As the HTTP bench does: with the dispatcher stopped, nothing may call DynamoDB for a second. */
async function idleCheck(meter: CapacityMeter): Promise<void> {
  meter.reset();
  const cpu = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const used = process.cpuUsage(cpu);
  console.log(
    `  idle check, dispatcher stopped: ${meter.calls} DynamoDB calls and ${round((used.user + used.system) / 1000, 1)} ms CPU in 1 s with no request`,
  );
  if (meter.calls > 0)
    throw new Error(
      `cost bench: something still calls DynamoDB in the background: ${JSON.stringify(meter.byTarget)}`,
    );
}

/**
 * What DynamoDB Local reports for the floor's writes: each stored receipt (read back as the service
 * left it) put once with a condition into a table of the same key and no index or stream, and the
 * audit record of its sealing put into a table keyed like the audit table.
 */
async function measureFloorWrites(
  stack: LocalStack,
  clientId: string,
  stored: readonly { receiptId: string }[],
): Promise<FloorWrites> {
  const prefix = `${stack.config.tables.receipts}-cost-floor-${randomUUID().slice(0, 8)}`;
  const receiptsTable = `${prefix}-receipts`;
  const auditTable = `${prefix}-audit`;
  const { client, doc } = stack.deps.dynamo;
  const create = (name: string, hash: string, range: string) =>
    client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [
          { AttributeName: hash, AttributeType: 'S' },
          { AttributeName: range, AttributeType: 'S' },
        ],
        KeySchema: [
          { AttributeName: hash, KeyType: 'HASH' },
          { AttributeName: range, KeyType: 'RANGE' },
        ],
      }),
    );
  const receiptKey = tableDefinitions.receipts as { partitionKey: string; sortKey: string };
  await create(receiptsTable, receiptKey.partitionKey, receiptKey.sortKey);
  await create(auditTable, 'pk', 'sk');
  const sample = stored.slice(0, 20);
  const trail = await stack.deps.audit.forClient(clientId, 1000);
  let receiptUnits = 0;
  let auditUnits = 0;
  const put = async (table: string, item: Record<string, unknown>, key: string): Promise<number> => {
    const result = await doc.send(
      new PutCommand({
        TableName: table,
        Item: item,
        ConditionExpression: `attribute_not_exists(${key})`,
        ReturnConsumedCapacity: 'TOTAL',
      }),
    );
    return result.ConsumedCapacity?.CapacityUnits ?? Number.NaN;
  };
  for (const { receiptId } of sample) {
    const [receipt] = (await stack.deps.repos.receipts.allWithReceiptId(receiptId)).filter(
      (candidate) => candidate.merchantClientId === clientId,
    );
    if (!receipt) throw new Error(`cost bench: receipt ${receiptId} not found for the floor`);
    receiptUnits += await put(receiptsTable, { ...receipt, ...receiptTableKey(receipt) }, receiptKey.sortKey);
    const record = trail.find((entry) => entry.receiptId === receiptId);
    if (!record) throw new Error(`cost bench: no audit record of ${receiptId} for the floor`);
    auditUnits += await put(auditTable, { ...record }, 'sk');
  }
  await Promise.all(
    [receiptsTable, auditTable].map((TableName) => client.send(new DeleteTableCommand({ TableName }))),
  );
  return {
    receiptWriteUnits: round(receiptUnits / sample.length, 3),
    auditWriteUnits: round(auditUnits / sample.length, 3),
  };
}

/**
 * The floor of a mix (DECISIONS, Round 4, "Cost"): the same API Gateway requests and Lambda requests
 * (the authorizer's included), each invocation billed for a bare handler's compute (its CPU, plus the
 * waits nothing can remove: the floor's two writes in the sealing operation, the payment provider's
 * call), and the floor's durable writes. No reads, logs, traces or storage.
 */
function priceFloor(
  names: OperationName[],
  operations: Record<OperationName, OperationMeasure>,
  writes: FloorWrites,
  table: PriceTable,
): LineItem[] {
  const p = (name: string) => table.prices[name]?.value ?? Number.NaN;
  const a = (name: string) => table.assumptions[name]?.value ?? Number.NaN;
  const apiRequests = names.reduce((sum, name) => sum + operations[name].apiRequests, 0);
  const invocations = names.length + apiRequests;
  const durationMs = (op: OperationMeasure, floorCalls: number) =>
    Math.max(
      1,
      Math.ceil(
        op.bareCpuMsPerOp * Math.max(1, a('fullCpuMemoryMb') / op.memoryMb) +
          floorCalls * a('dynamoCallMs') +
          op.gatewayCallsPerOp * a('gatewayCallMs'),
      ),
    );
  const authorizer = operations['edge-authorizer'];
  const gbSeconds =
    names.reduce(
      (sum, name, index) =>
        sum + (operations[name].memoryMb / 1024) * (durationMs(operations[name], index === 0 ? 2 : 0) / 1000),
      0,
    ) +
    apiRequests * (authorizer.memoryMb / 1024) * (durationMs(authorizer, 0) / 1000);
  const units = writes.receiptWriteUnits + writes.auditWriteUnits;
  return [
    {
      item: `Lambda requests (${invocations}, authorizer included)`,
      usdPerMillion: invocations * p('lambdaRequestPerMillion'),
    },
    {
      item: `Lambda compute (${round(gbSeconds * 1000, 1)} GB-ms, bare handlers)`,
      usdPerMillion: gbSeconds * 1_000_000 * p('lambdaArmGbSecond'),
    },
    {
      item: `API Gateway REST (${apiRequests} requests)`,
      usdPerMillion: apiRequests * p('apiGatewayRestPerMillion'),
    },
    {
      item: `DynamoDB writes (${round(units, 2)} WRU: the sealed receipt ${writes.receiptWriteUnits}, its audit record ${writes.auditWriteUnits})`,
      usdPerMillion: units * p('dynamoWriteRequestUnitPerMillion'),
    },
  ].map((line) => ({ item: line.item, usdPerMillion: round(line.usdPerMillion, 3) }));
}

/**
 * The dispatcher in AWS is the receipts stream's Lambda; here it polls. Its cost per receipt is what
 * it does with N new receipts minus what its polling alone costs over the same time.
 */
async function measureDispatch(
  stack: LocalStack,
  receiver: Awaited<ReturnType<typeof startReceiver>>,
  meter: CapacityMeter,
  logs: LogMeter,
  merchant: string,
  users: User[],
  n: number,
  backlog: readonly string[],
): Promise<OperationMeasure> {
  const quiet = async () => {
    // Every receipt stored while the dispatcher was stopped delivered, then nothing more for a second.
    await waitFor(() => backlog.every((id) => receiver.receiptIds.has(id)), 120_000);
    let last = -1;
    while (last !== receiver.received()) {
      last = receiver.received();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  logs.start();
  try {
    stack.dispatcher.start();
    await quiet();
    // Polling alone, for a baseline.
    meter.reset();
    let cpu = process.cpuUsage();
    let started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 3000));
    let used = process.cpuUsage(cpu);
    const idle = {
      byTarget: structuredClone(meter.byTarget),
      ms: performance.now() - started,
      cpuMs: (used.user + used.system) / 1000,
      calls: meter.calls,
      read: meter.readUnits,
      write: meter.writeUnits,
      logBytes: logs.bytes,
    };
    await stack.dispatcher.stop();
    const fresh: string[] = [];
    for (let i = 0; i < n; i++) {
      const stored = await post(
        stack.url,
        '/api/v1/receipts/encrypt',
        merchant,
        withIds(encryptBody(users[i % users.length] as User)),
      );
      // `post` answers the response's data: the envelope.
      if (typeof stored.receiptId === 'string') fresh.push(stored.receiptId);
    }
    if (fresh.length !== n) throw new Error('cost bench: a receipt for the dispatch run was not stored');
    meter.reset();
    logs.bytes = 0;
    cpu = process.cpuUsage();
    started = performance.now();
    stack.dispatcher.start();
    // Each of the n receipts delivered, by its id: nothing left over from before counts.
    await waitFor(() => fresh.every((id) => receiver.receiptIds.has(id)), 120_000);
    await stack.dispatcher.stop();
    // Each attempt's outcome is written after its POST arrives: counted too.
    await stack.deliveryQueue.drain();
    used = process.cpuUsage(cpu);
    const elapsed = performance.now() - started;
    const share = elapsed / idle.ms;
    const perOp = (busy: number, baseline: number) => Math.max(0, (busy - baseline * share) / n);
    const unitsByTarget: UnitsByTarget = {};
    for (const [target, busy] of Object.entries(meter.byTarget)) {
      const baseline = idle.byTarget[target] ?? { read: 0, write: 0 };
      unitsByTarget[target] = {
        read: round(perOp(busy.read, baseline.read), 3),
        write: round(perOp(busy.write, baseline.write), 3),
      };
    }
    return {
      unitsByTarget,
      // A bare dispatcher: one event serialised for one POST.
      bareCpuMsPerOp: 0,
      functionName: 'webhook-dispatch',
      memoryMb: DEFAULT_MEMORY_MB,
      invocations: n,
      cpuMsPerOp: round(perOp((used.user + used.system) / 1000, idle.cpuMs), 3),
      wallMsP50: Number.NaN,
      dynamoCallsPerOp: round(perOp(meter.calls, idle.calls), 2),
      readUnitsPerOp: round(perOp(meter.readUnits, idle.read), 3),
      writeUnitsPerOp: round(perOp(meter.writeUnits, idle.write), 3),
      logBytesPerOp: round(perOp(logs.bytes, idle.logBytes), 0),
      // The webhook POST leaves AWS: its bytes are data transfer out.
      responseBytesPerOp: 600,
      storedBytesPerOp: 0,
      gatewayCallsPerOp: 0,
      apiRequests: 0,
    };
  } finally {
    logs.stop();
  }
}

function priceMix(
  names: OperationName[],
  operations: Record<OperationName, OperationMeasure>,
  table: PriceTable,
): LineItem[] {
  const p = (name: string) => table.prices[name]?.value ?? Number.NaN;
  const a = (name: string) => table.assumptions[name]?.value ?? Number.NaN;
  const million = 1_000_000;
  const perMillion = (units: number, pricePerMillion: number) => units * pricePerMillion;
  const invocations = [
    ...names.map((name) => operations[name]),
    ...names.flatMap((name) =>
      Array.from({ length: operations[name].apiRequests }, () => operations['edge-authorizer']),
    ),
  ];
  const durationMs = (op: OperationMeasure) =>
    Math.ceil(
      op.cpuMsPerOp * Math.max(1, a('fullCpuMemoryMb') / op.memoryMb) +
        op.dynamoCallsPerOp * a('dynamoCallMs') +
        op.gatewayCallsPerOp * a('gatewayCallMs'),
    );
  const apiRequests = names.reduce((sum, name) => sum + operations[name].apiRequests, 0);
  const sum = (f: (op: OperationMeasure) => number) => invocations.reduce((total, op) => total + f(op), 0);
  const gbSeconds = sum((op) => (op.memoryMb / 1024) * (durationMs(op) / 1000));
  const logBytes =
    sum((op) => op.logBytesPerOp + a('lambdaLogBytesPerInvocation')) +
    apiRequests * a('apiGatewayAccessLogBytes');
  return [
    {
      item: `Lambda requests (${invocations.length} per receipt, authorizer included)`,
      usdPerMillion: perMillion(invocations.length, p('lambdaRequestPerMillion')),
    },
    {
      item: `Lambda compute (${round(gbSeconds * 1000, 1)} GB-ms per receipt, arm64)`,
      usdPerMillion: gbSeconds * million * p('lambdaArmGbSecond'),
    },
    {
      item: `API Gateway REST (${apiRequests} requests)`,
      usdPerMillion: perMillion(apiRequests, p('apiGatewayRestPerMillion')),
    },
    {
      item: `DynamoDB writes (${round(
        sum((op) => op.writeUnitsPerOp),
        2,
      )} WRU)`,
      usdPerMillion: perMillion(
        sum((op) => op.writeUnitsPerOp),
        p('dynamoWriteRequestUnitPerMillion'),
      ),
    },
    {
      item: `DynamoDB reads (${round(
        sum((op) => op.readUnitsPerOp),
        2,
      )} RRU)`,
      usdPerMillion: perMillion(
        sum((op) => op.readUnitsPerOp),
        p('dynamoReadRequestUnitPerMillion'),
      ),
    },
    {
      item: `CloudWatch Logs (${round(logBytes, 0)} bytes)`,
      usdPerMillion: ((logBytes * million) / 1024 ** 3) * p('cloudWatchLogsIngestGb'),
    },
    {
      item: `X-Ray (${a('xraySampledShare') * 100} % of requests traced)`,
      usdPerMillion: perMillion(
        Math.max(1, apiRequests) * a('xraySampledShare'),
        p('xrayTracesRecordedPerMillion'),
      ),
    },
    {
      item: 'Data transfer out (responses, webhooks)',
      usdPerMillion: ((sum((op) => op.responseBytesPerOp) * million) / 1024 ** 3) * p('dataTransferOutGb'),
    },
    // Measured: no KMS or Secrets Manager call per request; the public escrow key is cached for the
    // container's life and the secrets for 300 s (per container-hour: 12 reads, ~$0.00006).
    { item: 'KMS and Secrets Manager (0 calls per request; cached per container)', usdPerMillion: 0 },
    {
      item: `DynamoDB storage, one month (${round(
        sum((op) => op.storedBytesPerOp),
        0,
      )} bytes of receipt items)`,
      usdPerMillion:
        ((sum((op) => op.storedBytesPerOp) * million) / 1024 ** 3) *
        p('dynamoStorageGbMonth') *
        a('receiptStorageMonths'),
    },
  ].map((line) => ({ item: line.item, usdPerMillion: round(line.usdPerMillion, 3) }));
}

function printCost(
  operations: Record<OperationName, OperationMeasure>,
  mixes: Record<string, MixCost>,
  prices: PriceTable,
  n: number,
): void {
  printTable(
    `Cost inputs, measured per operation (${n} invocations each, one after another; handler code in this process)`,
    [
      'operation',
      'function',
      'memory MB',
      'CPU ms',
      'DDB calls',
      'RRU',
      'WRU',
      'log bytes',
      'response bytes',
      'stored bytes',
    ],
    (Object.entries(operations) as [OperationName, OperationMeasure][]).map(([name, op]) => [
      name,
      op.functionName,
      op.memoryMb,
      op.cpuMsPerOp,
      op.dynamoCallsPerOp,
      op.readUnitsPerOp,
      op.writeUnitsPerOp,
      op.logBytesPerOp,
      op.responseBytesPerOp,
      op.storedBytesPerOp,
    ]),
  );
  const targets = [
    ...new Set(Object.values(operations).flatMap((op) => Object.keys(op.unitsByTarget))),
  ].sort();
  const names = Object.keys(operations) as OperationName[];
  printTable(
    'DynamoDB units per operation by table and index (ReturnConsumedCapacity INDEXES, as DynamoDB Local reports them): write / read',
    ['table or index', ...names],
    targets.map((target) => [
      target,
      ...names.map((name) => {
        const units = operations[name].unitsByTarget[target];
        return units ? `${round(units.write, 2)} / ${round(units.read, 2)}` : '';
      }),
    ]),
  );
  for (const [mix, entry] of Object.entries(mixes)) {
    printTable(
      `One million receipts, ${mix}: USD (${prices.region}, list prices of ${prices.date}, bench/prices.json)`,
      ['item', 'USD per million', 'floor'],
      [
        ...entry.lines.map((line) => [line.item, line.usdPerMillion, ''] as const),
        ...entry.floor.lines.map((line) => [`floor: ${line.item}`, '', line.usdPerMillion] as const),
        ['total', entry.totalPerMillion, entry.floor.totalPerMillion] as const,
        [`ratio (target ≤ ${COST_FLOOR_RATIO_TARGET})`, `${entry.ratio}×`, ''] as const,
      ],
    );
  }
  const unverified = Object.entries(prices.prices)
    .filter(([, price]) => !price.verified)
    .map(([name]) => name);
  console.log(
    `  Prices: ${prices.source}${unverified.length ? ` Least certain: ${unverified.join(', ')}.` : ''}\n` +
      `  Assumptions: ${Object.entries(prices.assumptions)
        .map(([name, assumption]) => `${name} = ${assumption.value} (${assumption.why})`)
        .join('; ')}`,
  );
}
