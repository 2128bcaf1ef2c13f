import { randomBytes } from 'node:crypto';
import { DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, describe, expect, it } from '@jest/globals';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import { prefixedTableNames, type TableNames } from '../../lib/kernel/tables.js';

const { client } = createDynamoClients({ region: 'us-east-1', endpoint: process.env.TEST_DYNAMODB_ENDPOINT });
afterAll(() => client.destroy());

const ttlStatusOf = async (names: TableNames) =>
  (await client.send(new DescribeTimeToLiveCommand({ TableName: names.rateLimits }))).TimeToLiveDescription;

describe('the local tables', () => {
  it('expire items by their TTL attribute, as in AWS', async () => {
    const names = prefixedTableNames(`ttl${randomBytes(4).toString('hex')}-`);
    await ensureTables(client, names);
    expect(await ttlStatusOf(names)).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
  });

  // DynamoDB Local deletes an item within seconds of its TTL by the machine's clock: a test whose clock
  // stands at a date now past lost rate-limit counters at random (test/infra/gateway-responses.test.ts).
  it('do not, for a test: its items must not vanish by a clock it does not inject', async () => {
    const names = prefixedTableNames(`nottl${randomBytes(4).toString('hex')}-`);
    await ensureTables(client, names, { timeToLive: false });
    expect((await ttlStatusOf(names))?.TimeToLiveStatus).not.toBe('ENABLED');
  });
});
