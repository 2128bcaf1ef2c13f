import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import type { Caller } from '../../lib/api-keys/authenticator.js';
import { createCoreDeps, type AppDeps } from '../../lib/app/deps.js';
import { inMemoryCardTagKeys } from '../../lib/crypto/card-tag.js';
import { createDynamoClients } from '../../lib/db/client.js';
import { ensureTables } from '../../lib/db/create-tables.js';
import { createGatewayRegistry } from '../../lib/gateways/registry.js';
import { ManualClock } from '../../lib/kernel/clock.js';
import { loadConfig, requireAllTables } from '../../lib/kernel/config.js';
import { createLogger } from '../../lib/kernel/log.js';
import type { Role } from '../../lib/kernel/route.js';
import { LogTelemetry } from '../../lib/kernel/telemetry.js';
import { tiers } from '../../lib/kernel/tiers.js';
import { importKeyFor, registerUser } from '../../lib/onboarding/onboarding.js';
import { encryptAndStore, digestOf } from '../../lib/receipts/encrypt.js';
import type { DigitalReceipt } from '../../lib/receipts/schemas.js';
import type { ReceiptStreamRecord } from '../../lib/webhooks/events.js';
import { systemResolver } from '../../lib/kernel/dns.js';
import { localWebhookUrlGuard } from '../../local/webhook-url-guard.js';
import type { HostResolver } from '../../lib/webhooks/url-guard.js';
import { startGatewaySandbox, type GatewaySandbox } from '../../local/gateway-sandbox/index.js';
import { gatewayConfigFromEnv } from '../../local/gateway-settings.js';
import { createApiKey } from '../../scripts/admin/api-keys.js';
import { runEscrowKey } from '../support/escrow-key.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';

/**
 * The use cases with the service's own deps (createCoreDeps over this file's uniquely prefixed tables
 * on the run's DynamoDB Local, the run's escrow key, an in-memory card-tag keyring, the gateway sandbox
 * behind the real SDKs) and a clock the test moves. No HTTP server: a use case is called as its
 * handler would call it, and its answer and the stored state are what a test looks at.
 */
export interface UseCases {
  deps: AppDeps;
  clock: ManualClock;
  /** Present when started with `gateways: true`. */
  sandbox: GatewaySandbox | undefined;
  /** A new API client with these roles, authenticated as the pipeline would. */
  caller(roles: Role[]): Promise<Caller>;
  close(): Promise<void>;
}

export interface UseCaseOptions {
  /** Service environment overrides (CLAIM_DAILY_LIMIT, CLAIM_WINDOW_MINUTES, ...). */
  env?: Record<string, string>;
  /** Start the gateway sandbox and point both gateways at it. */
  gateways?: boolean;
  resolveHost?: HostResolver;
  /** Where the clock starts. */
  start?: Date;
}

export async function startUseCases(options: UseCaseOptions = {}): Promise<UseCases> {
  const endpoint = process.env.TEST_DYNAMODB_ENDPOINT;
  if (!endpoint) {
    throw new Error(
      'TEST_DYNAMODB_ENDPOINT is not set: run the tests with `npm test` (the integration project starts DynamoDB Local)',
    );
  }
  const config = loadConfig({
    STAGE: 'local',
    DYNAMODB_ENDPOINT: endpoint,
    TABLE_PREFIX: `u${randomBytes(4).toString('hex')}-`,
    ...options.env,
  });
  const dynamo = createDynamoClients({ region: config.region, endpoint });
  const sandbox = options.gateways ? await startGatewaySandbox() : undefined;
  try {
    await ensureTables(dynamo.client, requireAllTables(config), { timeToLive: false });
    const clock = new ManualClock(options.start ?? new Date('2026-11-21T12:00:00Z'));
    const logger = createLogger({ level: 'ERROR' });
    const deps: AppDeps = {
      ...createCoreDeps({
        config,
        dynamo,
        clock,
        logger,
        tiers,
        telemetry: new LogTelemetry(logger),
        cardTagKeys: inMemoryCardTagKeys(),
        ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
        // As the local stack's wiring: its receivers listen on loopback over plain http.
        webhookUrlGuard: localWebhookUrlGuard(options.resolveHost ?? systemResolver),
      }),
      escrow: await runEscrowKey(),
      gateways: createGatewayRegistry(
        gatewayConfigFromEnv(sandbox ? { GATEWAY_SANDBOX_URL: sandbox.url } : {}),
      ),
    };
    return {
      deps,
      clock,
      sandbox,
      async caller(roles) {
        const { apiKey } = await createApiKey(
          { repository: deps.repos.apiKeys, now: () => clock.now() },
          { name: `use case ${roles.join('+')}`, roles, tier: 'enterprise' },
        );
        const caller = await deps.authenticator.authenticate(apiKey);
        if (!caller) throw new Error('a key just created did not authenticate');
        return caller;
      },
      async close() {
        await sandbox?.stop();
        dynamo.client.destroy();
      },
    };
  } catch (error) {
    await sandbox?.stop();
    dynamo.client.destroy();
    throw error;
  }
}

/** What each use case's audit and log lines carry; unique so a test can tell its calls apart. */
export const request = () => ({ requestId: randomUUID(), sourceIp: '203.0.113.7' });

export interface Cardholder {
  userId: string;
  keyId: string;
  hashedPan: string;
  /** The device's private key: what opens a receipt wrapped for the user. */
  privateKey: KeyObject;
}

/** A P-256 device key, imported for the issuer: what a phone makes (cheaper than RSA generation). */
export async function importDeviceKey(
  deps: AppDeps,
  issuer: Caller,
): Promise<{ keyId: string; publicKey: string; privateKey: KeyObject }> {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  const imported = await importKeyFor(deps, issuer, spki, request().requestId);
  return { keyId: imported.keyId, publicKey: imported.publicKey, privateKey: pair.privateKey };
}

/** A device key imported and registered for a card (a new one unless given). */
export async function registerCardholder(
  deps: AppDeps,
  issuer: Caller,
  hashedPan: string = newHashedPan(),
): Promise<Cardholder> {
  const key = await importDeviceKey(deps, issuer);
  const { user } = await registerUser(
    deps,
    issuer,
    { hashedPan, publicKey: key.publicKey, keyId: key.keyId },
    request().requestId,
  );
  return { userId: user.userId, keyId: key.keyId, hashedPan, privateKey: key.privateKey };
}

/** A receipt paid with the card `hashedPan`, encrypted and stored by the merchant as encrypt-receipt does. */
export async function storeReceipt(
  deps: AppDeps,
  merchant: Caller,
  hashedPan: string | undefined,
  receipt: DigitalReceipt = sampleReceipt(),
) {
  const { envelope, recipientUserId } = await encryptAndStore(deps, {
    receipt,
    ...(hashedPan ? { recipientHashedPan: hashedPan } : {}),
    caller: merchant,
    requestId: request().requestId,
    requestDigest: digestOf(receipt),
  });
  return { receipt, envelope, recipientUserId };
}

/** When the sample receipt's card transaction was made (test/support/fixtures.ts), and a time `ms` from it. */
export const PAID_AT = '2026-11-21T09:15:00.000Z';
export const shifted = (ms: number): string => new Date(Date.parse(PAID_AT) + ms).toISOString();

/** The sample receipt's card transaction as the issuer's ledger has it (17.48 USD at PAID_AT), changed by `overrides`. */
export const cardTransaction = <T extends object>(overrides: T) => ({
  amount: 1748,
  currency: 'USD',
  transactionDate: PAID_AT,
  ...overrides,
});

/**
 * The sample receipt (paid 2026-11-21 09:15 UTC, 17.48 USD of which 2.00 tip, card 4242) with its card
 * transaction changed: another tip (0 for none), other card digits (null for none), another time.
 */
export function receiptWith(change: { tip?: number; last4?: string | null; at?: string }): DigitalReceipt {
  const base = sampleReceipt();
  const tip = change.tip ?? base.summary.tipAmount ?? 0;
  const { cardDetails, ...transactionRest } = base.transaction;
  const details = change.last4 === null ? undefined : { ...cardDetails, last4: change.last4 ?? '4242' };
  return sampleReceipt({
    transaction: {
      ...transactionRest,
      ...(change.at ? { datetime: change.at } : {}),
      ...(details ? { cardDetails: details } : {}),
    },
    summary: { ...base.summary, tipAmount: tip, total: base.summary.subtotal + base.summary.totalTax + tip },
  });
}

/**
 * The receipts table's stream, read as the dispatcher's event source reads it: `next()` answers the
 * records written since the last call. This file's tables are its own, so every record is its doing.
 */
export function receiptStream(useCases: UseCases): {
  next(): Promise<ReceiptStreamRecord[]>;
  close(): void;
} {
  const { config } = useCases.deps;
  const streams = new DynamoDBStreamsClient({
    region: config.region,
    endpoint: config.dynamoDbEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const after = new Map<string, string>();
  return {
    async next() {
      const { Table } = await useCases.deps.dynamo.client.send(
        new DescribeTableCommand({ TableName: requireAllTables(config).receipts }),
      );
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: Table?.LatestStreamArn }),
      );
      const records: ReceiptStreamRecord[] = [];
      for (const { ShardId } of StreamDescription?.Shards ?? []) {
        if (!ShardId) continue;
        const last = after.get(ShardId);
        // A fresh iterator each time: DynamoDB Local will not serve records through one taken while
        // its shard was still empty.
        let { ShardIterator: iterator } = await streams.send(
          new GetShardIteratorCommand({
            StreamArn: Table?.LatestStreamArn,
            ShardId,
            ...(last
              ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: last }
              : { ShardIteratorType: 'TRIM_HORIZON' }),
          }),
        );
        while (iterator) {
          const page = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
          const batch = (page.Records ?? []) as ReceiptStreamRecord[];
          if (batch.length === 0) break;
          records.push(...batch);
          const sequence = batch.at(-1)?.dynamodb?.SequenceNumber;
          if (sequence) after.set(ShardId, sequence);
          iterator = page.NextShardIterator;
        }
      }
      return records;
    },
    close: () => streams.destroy(),
  };
}
