import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { createDynamoClients } from '../../lib/db/client.js';
import { maxLeaseFor, RateLimiter, type RateLimitState } from '../../lib/db/rate-limits.js';
import { startTestStack, type TestStack } from '../support/stack.js';

/**
 * The shared per-minute counter against DynamoDB Local, with several limiters on one table playing
 * the Lambda instances that share it in AWS. Each limiter has its own client, so its counter writes
 * can be counted.
 */
describe('rate limiter: leases claimed from the shared DynamoDB counter', () => {
  let stack: TestStack;
  let bucketSeq = 0;
  const WINDOW = 60;
  const windowStartAt = (minute: number) => new Date(Date.UTC(2026, 10, 22, 12, minute, 0) + 1_000);
  const bucket = () => `key#test-${process.pid}-${Date.now()}-${bucketSeq++}#general`;

  /** A limiter as one instance would hold it, and how many counter writes it has made. */
  const tableName = () => stack.config.tables.rateLimits as string;

  function instance(): { limiter: RateLimiter; writes: () => number; doc: DynamoDBDocumentClient } {
    const endpoint = process.env.TEST_DYNAMODB_ENDPOINT as string;
    const { doc } = createDynamoClients({ region: 'us-east-1', endpoint });
    let writes = 0;
    doc.middlewareStack.add(
      (next) => (args) => {
        writes += 1;
        return next(args);
      },
      { step: 'initialize', name: 'countCounterWrites' },
    );
    return { limiter: new RateLimiter(doc, tableName()), writes: () => writes, doc };
  }

  const position = (state: RateLimitState) => state.limit - state.remaining;

  beforeAll(async () => {
    stack = await startTestStack();
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('counts a small budget one request at a time, exactly as a plain counter', async () => {
    const { limiter, writes } = instance();
    const key = bucket();
    const states = [];
    for (let index = 0; index < 5; index += 1)
      states.push(await limiter.hit(key, 60, WINDOW, windowStartAt(1)));
    expect(states.map((state) => state.remaining)).toEqual([59, 58, 57, 56, 55]);
    expect(writes()).toBe(5);
    expect(maxLeaseFor(199)).toBe(1);
  });

  it('serves a busy key with a handful of counter writes, its remaining count going down by one', async () => {
    const { limiter, writes } = instance();
    const key = bucket();
    const remaining: number[] = [];
    for (let index = 0; index < 1_000; index += 1)
      remaining.push((await limiter.hit(key, 30_000, WINDOW, windowStartAt(2))).remaining);
    expect(remaining).toEqual(Array.from({ length: 1_000 }, (_, index) => 29_999 - index));
    // Leases of 1, 2, 4 … 256, then the 300 cap (1 % of the limit): 11 writes for 1,000 requests.
    expect(writes()).toBe(11);
  });

  it('never lets more than the limit through across instances and concurrent requests', async () => {
    const instances = [instance(), instance(), instance()];
    const key = bucket();
    const limit = 1_000;
    const at = windowStartAt(3);
    const states = await Promise.all(
      Array.from({ length: 1_300 }, (_, index) =>
        (instances[index % instances.length] as (typeof instances)[number]).limiter.hit(
          key,
          limit,
          WINDOW,
          at,
        ),
      ),
    );
    const allowed = states.filter((state) => state.allowed);
    expect(allowed.length).toBeLessThanOrEqual(limit);
    // Units stranded in an instance's last lease (at most 1 % of the limit each) are all that is lost.
    expect(allowed.length).toBeGreaterThanOrEqual(limit - instances.length * maxLeaseFor(limit));
    // Every allowed request had its own position in the count, and all of them within the limit.
    const positions = allowed.map(position);
    expect(new Set(positions).size).toBe(allowed.length);
    expect(Math.max(...positions)).toBeLessThanOrEqual(limit);
    expect(states.filter((state) => !state.allowed).every((state) => state.remaining === 0)).toBe(true);
    // Concurrent requests in one instance wait for one refill instead of each writing.
    const totalWrites = instances.reduce((sum, { writes }) => sum + writes(), 0);
    expect(totalWrites).toBeLessThan(1_300 / 5);
  });

  it('refuses past the limit without writing again, and starts afresh in the next window', async () => {
    const { limiter, writes } = instance();
    const key = bucket();
    const limit = 200;
    const states = [];
    for (let index = 0; index < 203; index += 1)
      states.push(await limiter.hit(key, limit, WINDOW, windowStartAt(4)));
    expect(states.filter((state) => state.allowed)).toHaveLength(limit);
    expect(states.slice(limit).map((state) => [state.allowed, state.remaining])).toEqual([
      [false, 0],
      [false, 0],
      [false, 0],
    ]);
    const writesAtLimit = writes();
    await limiter.hit(key, limit, WINDOW, windowStartAt(4));
    expect(writes()).toBe(writesAtLimit);

    const next = await limiter.hit(key, limit, WINDOW, windowStartAt(5));
    expect(next).toMatchObject({ allowed: true, remaining: limit - 1 });
    expect(writes()).toBe(writesAtLimit + 1);
  });

  it('takes one unit at a time once a lease would no longer fit under the limit', async () => {
    const busy = instance();
    const key = bucket();
    const limit = 1_000;
    const at = windowStartAt(6);
    // Leases of 1, 2, 4, 8, then 10 (1 % of the limit): 65 requests spend them exactly.
    for (let index = 0; index < 65; index += 1) await busy.limiter.hit(key, limit, WINDOW, at);
    // Other instances bring the window's count to 995 meanwhile.
    const counter = { pk: `${key}#${Math.floor(at.getTime() / 1000) - 1}` };
    await busy.doc.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: counter,
        UpdateExpression: 'ADD #count :more',
        ExpressionAttributeNames: { '#count': 'count' },
        ExpressionAttributeValues: { ':more': 995 - 65 },
      }),
    );
    const countNow = async () =>
      Number(
        (await busy.doc.send(new GetCommand({ TableName: tableName(), Key: counter, ConsistentRead: true })))
          .Item?.count,
      );
    expect(await busy.limiter.hit(key, limit, WINDOW, at)).toMatchObject({ allowed: true, remaining: 4 });
    // A lease of 10 would have taken the count to 1,005 and left nothing for the other instances.
    expect(await countNow()).toBe(996);
    const another = instance();
    expect(await another.limiter.hit(key, limit, WINDOW, at)).toMatchObject({ allowed: true, remaining: 3 });
    const rest = [];
    for (let index = 0; index < 5; index += 1) rest.push(await busy.limiter.hit(key, limit, WINDOW, at));
    expect(rest.map((state) => state.allowed)).toEqual([true, true, true, false, false]);
    // The lease that reached 1,000 tells the instance the window is spent: its refusals write nothing.
    expect(await countNow()).toBe(1_000);
  });
});
