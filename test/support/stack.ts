import { randomBytes } from 'node:crypto';
import { createApiKey } from '../../scripts/admin/api-keys.js';
import { ManualClock } from '../../lib/kernel/clock.js';
import type { Role } from '../../lib/kernel/route.js';
import type { TierName } from '../../lib/kernel/tiers.js';
import { startLocalStack, type LocalStack, type LocalStackOptions } from '../../local/stack.js';
import { contractValidator, type ContractViolation } from './contract.js';
import { runEscrowKey } from './escrow-key.js';

export interface HttpReply<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  json: T;
}

export interface TestStack extends LocalStack {
  clock: ManualClock;
  /** Responses that broke the OpenAPI contract; `request()` also throws on the first of each. */
  contractViolations: readonly ContractViolation[];
  apiKey(
    roles: Role[],
    tier?: TierName,
    name?: string,
  ): Promise<{ apiKey: string; keyId: string; clientId: string }>;
  request<T = Record<string, unknown>>(
    method: string,
    path: string,
    options?: { apiKey?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> },
  ): Promise<HttpReply<T>>;
}

/**
 * The local stack over real HTTP and the run's shared DynamoDB Local, with its own tables (a unique
 * prefix), the run's escrow key (test/support/escrow-key.ts), the gateway sandbox and a clock the test
 * moves.
 */
export async function startTestStack(options: LocalStackOptions = {}): Promise<TestStack> {
  const endpoint = options.dynamoDbEndpoint ?? process.env.TEST_DYNAMODB_ENDPOINT;
  if (!endpoint) {
    throw new Error(
      'TEST_DYNAMODB_ENDPOINT is not set: run the tests with `npm test` (the integration project starts DynamoDB Local)',
    );
  }
  const clock = options.clock instanceof ManualClock ? options.clock : new ManualClock(new Date());
  const stack = await startLocalStack({
    escrowKey: await runEscrowKey(),
    tablePrefix: `t${randomBytes(4).toString('hex')}-`,
    inMemory: true,
    // A test's clock may stand at a past date: its items must not expire by the machine's clock.
    timeToLive: false,
    port: 0,
    logLevel: 'INFO',
    // Webhook tests wait for the stream and the sweeper; a short cycle keeps that wait short.
    dispatcherIntervalMs: 200,
    // The test's clock stands still unless moved, and a move is swept on the next poll: the backstop
    // sweep can be rare, which keeps an idle stack from querying DynamoDB Local 17 times a second.
    sweepIntervalMs: 5_000,
    // A test file calls a few of the routes: the others' functions are never imported (about 0.1 s of
    // CPU a stack). Every one is imported by `npm start` in npm-start.test.ts, which loads them all
    // before it listens, and called by the OWASP and fuzz tests.
    lazyHandlers: true,
    ...options,
    dynamoDbEndpoint: endpoint,
    clock,
    // A loaded two-core CI machine can take seconds over one DynamoDB call; health must not call that down.
    env: { ANON_RATE_LIMIT_PER_MINUTE: '10000', HEALTH_CHECK_TIMEOUT_MS: '30000', ...options.env },
  });
  const contract = contractValidator();
  return {
    ...stack,
    clock,
    contractViolations: contract.violations,
    async apiKey(roles, tier = 'enterprise', name = `test ${roles.join('+')}`) {
      const created = await createApiKey(
        { repository: stack.deps.repos.apiKeys, now: () => clock.now() },
        { name, roles, tier },
      );
      return { apiKey: created.apiKey, keyId: created.record.keyId, clientId: created.record.clientId };
    },
    async request(method, path, requestOptions = {}) {
      const headers: Record<string, string> = { ...requestOptions.headers };
      if (requestOptions.apiKey) headers['X-API-Key'] = requestOptions.apiKey;
      let body: string | undefined = requestOptions.rawBody;
      if (requestOptions.body !== undefined) {
        body = JSON.stringify(requestOptions.body);
        headers['Content-Type'] ??= 'application/json';
      }
      const response = await fetch(`${stack.url}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
      });
      const text = await response.text();
      let json: unknown = undefined;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      // Every response is checked against the OpenAPI document: a departure fails the test that got it.
      contract.assert({ method, path, status: response.status, headers: response.headers, text, json });
      return { status: response.status, headers: response.headers, text, json: json as never };
    },
  };
}
