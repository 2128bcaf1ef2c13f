import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { AUDIT_SHARDS, AuditLog, auditPartition } from '../../lib/db/audit.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import { ManualClock } from '../../lib/kernel/clock.js';
import { prefixedTableNames } from '../../lib/kernel/tables.js';

/**
 * docs/SCALE.md's hottest key: one merchant client's audit trail. At the enterprise tier's allowed
 * rates (500 encrypts and 250 payments a second, three records per payment) one client writes 1,250
 * audit records a second, 1,500 with the edge's burst; under one partition key with a time-ordered
 * sort key that is over DynamoDB's 1,000 write units a second per partition. DynamoDB Local has no
 * throttling, so this drives one second's worth of records (the clock held inside one second) and
 * shows, from the capacity DynamoDB reports for each write, that no partition key gets near the limit.
 */
const RATE_PER_SECOND = 1_500;
const PARTITION_WRITE_UNITS_PER_SECOND = 1_000;

const endpoint = process.env.TEST_DYNAMODB_ENDPOINT as string;
const tables = prefixedTableNames(`audit-shards-${process.pid}-${Date.now()}-`);
const { client, doc } = createDynamoClients({ region: 'us-east-1', endpoint });

// The write units DynamoDB reports for each put, by partition key.
const unitsByPartition = new Map<string, number>();
doc.middlewareStack.add(
  (next) => async (args) => {
    const input = args.input as {
      TableName?: string;
      Item?: { pk?: string };
      ReturnConsumedCapacity?: string;
    };
    if (input.TableName !== tables.audit || !input.Item?.pk) return next(args);
    input.ReturnConsumedCapacity = 'TOTAL';
    const result = await next(args);
    const units = (result.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity
      ?.CapacityUnits;
    unitsByPartition.set(input.Item.pk, (unitsByPartition.get(input.Item.pk) ?? 0) + (units ?? 0));
    return result;
  },
  { step: 'initialize', name: 'auditUnitsByPartition' },
);

beforeAll(async () => {
  await ensureTables(client, tables, { timeToLive: false });
});

describe("one merchant's audit trail at the enterprise tier's rate", () => {
  const clientId = randomUUID();
  const clock = new ManualClock(new Date('2026-11-25T12:00:00.000Z'));
  const audit = new AuditLog(doc, () => tables.audit, clock, 400);

  beforeAll(async () => {
    // One second of writes, 50 at a time, as many Lambda instances would make them.
    const pending = Array.from({ length: RATE_PER_SECOND }, (_, index) => index);
    const worker = async () => {
      for (let index = pending.shift(); index !== undefined; index = pending.shift()) {
        clock.set(
          new Date(Date.parse('2026-11-25T12:00:00.000Z') + Math.floor((index * 1000) / RATE_PER_SECOND)),
        );
        await audit.record({
          action: index % 3 === 0 ? 'receipt.encrypt' : 'payment.create',
          outcome: 'success',
          requestId: randomUUID(),
          clientId,
          receiptId: randomUUID(),
          transactionId: randomUUID(),
        });
      }
    };
    await Promise.all(Array.from({ length: 50 }, worker));
  }, 120_000);

  it('would be a hot key under one partition key: one second of writes is over 1,000 write units', () => {
    const total = [...unitsByPartition.values()].reduce((sum, units) => sum + units, 0);
    expect(total).toBeGreaterThanOrEqual(RATE_PER_SECOND);
    expect(total).toBeGreaterThan(PARTITION_WRITE_UNITS_PER_SECOND);
  });

  it(`spreads them over ${AUDIT_SHARDS} partition keys, none near the per-partition limit`, () => {
    expect([...unitsByPartition.keys()].sort()).toEqual(
      Array.from({ length: AUDIT_SHARDS }, (_, shard) => auditPartition(clientId, shard)).sort(),
    );
    const busiest = Math.max(...unitsByPartition.values());
    // An even spread is 94 units each; random placement stays far below a quarter of the limit.
    expect(busiest).toBeLessThan(PARTITION_WRITE_UNITS_PER_SECOND / 4);
    expect(Math.min(...unitsByPartition.values())).toBeGreaterThan(0);
  });

  it('stores every record once, and reads the trail back newest first across the shards', async () => {
    let stored = 0;
    for (let shard = 0; shard < AUDIT_SHARDS; shard += 1) {
      const page = await doc.send(
        new QueryCommand({
          TableName: tables.audit,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': auditPartition(clientId, shard) },
          Select: 'COUNT',
        }),
      );
      stored += page.Count ?? 0;
    }
    expect(stored).toBe(RATE_PER_SECOND);
    const newest = await audit.forClient(clientId, 40);
    expect(newest).toHaveLength(40);
    const times = newest.map((record) => record.sk);
    expect(times).toEqual([...times].sort().reverse());
    // The newest 40 of all 1,500, whichever shard holds them: the last 40 milliseconds' worth.
    expect(newest.every((record) => record.at >= '2026-11-25T12:00:00.973Z')).toBe(true);
  });
});
