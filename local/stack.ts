import { join } from 'node:path';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import { ManualClock, systemClock, type Clock } from '../lib/kernel/clock.js';
import { loadConfig, requireAllTables, type ServiceConfig } from '../lib/kernel/config.js';
import { createDynamoClients } from '../lib/db/client.js';
import { ensureTables } from '../lib/db/create-tables.js';
import { createCoreDeps, type AppDeps } from '../lib/app/deps.js';
import { createGatewayRegistry, type SecretName } from '../lib/gateways/registry.js';
import { createLogger, type LogLevel } from '../lib/kernel/log.js';
import { LogTelemetry } from '../lib/kernel/telemetry.js';
import { tiers as defaultTiers, type TierTable } from '../lib/kernel/tiers.js';
import { startDynamoDbLocal, type DynamoDbLocal } from './dynamodb-local.js';
import { inMemoryCardTagKeys, type CardTagKeyStore } from '../lib/crypto/card-tag.js';
import { LocalCardTagKeyFile } from './card-tag-key.js';
import { inMemoryCursorKey, type CursorKeySource } from '../lib/crypto/cursor.js';
import { localCursorKeyFile } from './cursor-key.js';
import { migrateLegacyCardData } from './legacy-card-data.js';
import { backfillEvidence } from '../lib/receipts/evidence-backfill.js';
import { migrateReceiptsToShards } from '../lib/receipts/migrate-sharded.js';
import { legacyReceiptsTableName } from '../lib/kernel/tables.js';
import { evidenceWidthMs } from '../lib/receipts/evidence.js';
import { LocalEscrowKey } from './escrow-key.js';
import { LocalLogSigningKey } from './log-signing-key.js';
import type { EscrowKey } from '../lib/crypto/escrow.js';
import { eventsPath, startGatewaySandbox, type GatewaySandbox } from './gateway-sandbox/index.js';
import { loadOrCreateWebhookSecrets, newWebhookSecrets } from './gateway-webhook-secrets.js';
import { gatewayConfigFromEnv } from './gateway-settings.js';
import { ensurePrivateDir } from './private-files.js';
import type { RouteDeclaration } from '../lib/kernel/route.js';
import { invocationScope } from './invocation-scope.js';
import { startHttpServer } from './server.js';
import { checkHealth } from '../lib/platform/health.js';
import { systemResolver, type HostResolver } from '../lib/webhooks/url-guard.js';
import { localWebhookUrlGuard } from './webhook-url-guard.js';
import { deliveryDeps } from '../lib/webhooks/delivery-deps.js';
import { DEFAULT_DISPATCHER_INTERVAL_MS, startDispatcher, type Dispatcher } from './stream-poller.js';
import { LocalDeliveryQueue } from './delivery-queue.js';

export interface LocalStackOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Use this DynamoDB (tests share one); otherwise DynamoDB Local is started. */
  dynamoDbEndpoint?: string;
  /** Where DynamoDB Local's files and the local escrow key live; ignored with inMemory. */
  dataDir?: string;
  inMemory?: boolean;
  tablePrefix?: string;
  /** Whether new tables expire items by TTL (lib/db/create-tables.ts says why tests turn it off). */
  timeToLive?: boolean;
  clock?: Clock;
  tiers?: TierTable;
  /** Environment overrides (TOKEN_TTL_SECONDS, ANON_RATE_LIMIT_PER_MINUTE, ...). */
  env?: Record<string, string>;
  logLevel?: LogLevel;
  /** The routes to serve; functions/routes.ts's table unless a test declares its own. */
  routes?: readonly RouteDeclaration[];
  /** Import each route's function on its first request rather than at start (startHttpServer's lazyHandlers). */
  lazyHandlers?: boolean;
  /** The escrow key; the data folder's key file (or a fresh one in memory, with inMemory) otherwise. */
  escrowKey?: EscrowKey;
  /** The card-tag key versions; the data folder's key file (or memory, with inMemory) otherwise. */
  cardTagKeys?: CardTagKeyStore;
  /** The paging cursors' key; the data folder's key file (or a fresh one in memory, with inMemory) otherwise. */
  cursorKey?: CursorKeySource;
  /**
   * A Powertools Tracer for the handlers, as in Lambda; there is no X-Ray here, so only a test that
   * watches what the handlers annotate passes one.
   */
  tracer?: Tracer;
  /** Stands in for DNS when checking webhook URLs (a test maps a name to a private address). */
  resolveHost?: HostResolver;
  /** How often the webhook dispatcher reads the receipts stream and sweeps due deliveries (ms). */
  dispatcherIntervalMs?: number;
  /** How often due retries are swept unless a move of a manual clock asks sooner (local/stream-poller.ts). */
  sweepIntervalMs?: number;
  /** The dispatcher's longest wait between polls of an idle stream (local/stream-poller.ts). */
  dispatcherIdleIntervalMs?: number;
  /** How the dispatcher waits between polls: a test may take them in hand (local/stream-poller.ts). */
  dispatcherSchedule?: (poll: () => void, ms: number) => () => void;
}

export interface LocalStack {
  url: string;
  config: ServiceConfig;
  deps: AppDeps;
  dynamoDbEndpoint: string;
  /** The gateway test double, unless real provider credentials were given. */
  sandbox: GatewaySandbox | undefined;
  /** Where the card-tag key versions are kept: `card-key rotate` adds to it. */
  cardTagKeys: CardTagKeyStore;
  /** The webhook dispatcher (local/stream-poller.ts): tests stop it and start it again. */
  dispatcher: Dispatcher;
  /** The local delivery queue the dispatcher and sweeper send to (local/delivery-queue.ts). */
  deliveryQueue: LocalDeliveryQueue;
  /** CPU microseconds the HTTP adapter spent standing in for API Gateway (local/server.ts). */
  adapterCpuMicros(): number;
  close(): Promise<void>;
}

const usesRealGateways = (env: NodeJS.ProcessEnv): boolean =>
  Boolean(env.STRIPE_SECRET_KEY || env.SQUARE_ACCESS_TOKEN);

/** The whole service on one machine: DynamoDB Local, the local escrow key, the gateway sandbox, HTTP. */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const dataDir = options.dataDir ?? join(process.cwd(), '.local-data');
  const stops: (() => Promise<void>)[] = [];
  try {
    // Before anything writes into it: tables, the escrow key and the sandbox's journal are the owner's.
    if (!options.inMemory) await ensurePrivateDir(dataDir);
    let endpoint = options.dynamoDbEndpoint;
    if (!endpoint) {
      const dbPath = options.inMemory ? undefined : join(dataDir, 'dynamodb');
      if (dbPath) await ensurePrivateDir(dbPath);
      const ddb: DynamoDbLocal = await startDynamoDbLocal(dbPath ? { dbPath } : {});
      stops.push(() => ddb.stop());
      endpoint = ddb.endpoint;
    }

    const env: NodeJS.ProcessEnv = { ...process.env, ...options.env };
    const clock = options.clock ?? systemClock;
    let sandbox: GatewaySandbox | undefined;
    if (!usesRealGateways(env)) {
      // Shared with the service: the sandbox signs the providers' events with them, the service verifies.
      const webhookSecrets = options.inMemory
        ? newWebhookSecrets()
        : await loadOrCreateWebhookSecrets(dataDir);
      sandbox = await startGatewaySandbox({
        port: 0,
        clock,
        webhookSecrets,
        ...(options.inMemory ? {} : { dataDir }),
      });
      stops.push(() => sandbox!.stop());
      env.GATEWAY_SANDBOX_URL = sandbox.url;
    }

    const tablePrefix = options.tablePrefix ?? env.TABLE_PREFIX ?? 'local-';
    const config = loadConfig({
      ...env,
      STAGE: env.STAGE ?? 'local',
      DYNAMODB_ENDPOINT: endpoint,
      TABLE_PREFIX: tablePrefix,
      LOCAL_ESCROW_DIR: dataDir,
    });
    // One logger per request served (local/invocation-scope.ts), as Lambda has one per invocation.
    const scope = invocationScope(createLogger({ level: options.logLevel ?? config.logLevel }));
    const logger = scope.logger;
    const dynamo = createDynamoClients({ region: config.region, endpoint });
    await ensureTables(dynamo.client, requireAllTables(config), { timeToLive: options.timeToLive });

    const escrow =
      options.escrowKey ??
      (options.inMemory ? await LocalEscrowKey.inMemory() : await LocalEscrowKey.loadOrCreate(dataDir));
    const logKey = options.inMemory
      ? LocalLogSigningKey.inMemory()
      : await LocalLogSigningKey.loadOrCreate(dataDir);
    const cardTagKeys =
      options.cardTagKeys ??
      (options.inMemory ? inMemoryCardTagKeys() : await LocalCardTagKeyFile.loadOrCreate(dataDir));
    const cursorKey =
      options.cursorKey ?? (options.inMemory ? inMemoryCursorKey() : await localCursorKeyFile(dataDir));
    // Square signs the notification URL with the body: this stack's events URL, known once it listens.
    const listening: { notificationUrl?: string } = {};
    const localSettings: Partial<Record<SecretName, string | undefined>> = {
      STRIPE_WEBHOOK_SECRET: sandbox?.webhookSecrets.stripe,
      SQUARE_WEBHOOK_SIGNATURE_KEY: sandbox?.webhookSecrets.square,
    };
    const gateways = createGatewayRegistry(gatewayConfigFromEnv(env), {
      stage: config.stage,
      // A test's clock times the gateway calls out when the test moves it past GATEWAY_TIMEOUT_MS.
      ...(clock instanceof ManualClock ? { timeouts: clock } : {}),
      resolveSecret: async (name) =>
        name === 'SQUARE_WEBHOOK_URL' ? listening.notificationUrl : localSettings[name],
    });
    const deps: AppDeps = {
      ...createCoreDeps({
        config,
        dynamo,
        clock,
        logger,
        tiers: options.tiers ?? defaultTiers,
        telemetry: new LogTelemetry(logger),
        cardTagKeys,
        // The admin CLI rotates the key from another process: a few seconds and the server uses it.
        cardTagKeysMaxAgeMs: 5_000,
        cursorKey,
        ...(options.tracer ? { tracer: options.tracer } : {}),
        ...(options.resolveHost ? { resolveHost: options.resolveHost } : {}),
        // Plain http to loopback, for the local receivers: decided here, by the local stack, never by a stage.
        webhookUrlGuard: localWebhookUrlGuard(options.resolveHost ?? systemResolver),
      }),
      escrow,
      logKey,
      gateways,
    };
    if (!options.inMemory) {
      // A data folder from before the sharded receipts table (issue 40) has its receipts copied into it.
      const copied = await migrateReceiptsToShards({
        client: dynamo.client,
        doc: dynamo.doc,
        tables: {
          legacyReceipts: `${tablePrefix}${legacyReceiptsTableName}`,
          receipts: requireAllTables(config).receipts,
        },
      });
      if (copied.copied > 0) logger.info('receipts copied into the sharded receipts table', { ...copied });
      // A data folder from before card tags is moved to them before anything is served.
      const migrated = await migrateLegacyCardData({
        doc: dynamo.doc,
        tables: requireAllTables(config),
        keyring: await deps.cardTags.keyring(),
        escrow,
      });
      if (Object.values(migrated).some((count) => count > 0))
        logger.info('data folder moved from hashed card numbers to card tags', { ...migrated });
      // Escrowed receipts stored before the evidence index get their entries (and lose the card tag
      // and time they carried); entries of an older key version or claim window are re-keyed.
      const indexed = await backfillEvidence({
        doc: dynamo.doc,
        tables: requireAllTables(config),
        keyring: await deps.cardTags.keyring(),
        widthMs: evidenceWidthMs({ config }),
        audit: deps.audit,
      });
      if (Object.values(indexed).some((count) => count > 0))
        logger.info('evidence index brought up to date', { ...indexed });
    }
    if (!options.lazyHandlers) {
      // Ready before it says so (`npm start` prints "listening" once this returns): both gateway SDKs
      // loaded and one health check made, which warms the DynamoDB, escrow and gateway clients. Left
      // to the first request, that took 10 s on a loaded machine and could answer 503. Its report is
      // not kept: health checks again when asked, and a dependency down now is one it reports then.
      await checkHealth(deps);
    }
    // Bound once the dispatcher runs (it starts after the server, which it needs the address of).
    let invoked = (): void => undefined;
    const http = await startHttpServer(deps, {
      invocationScope: scope,
      onInvoked: () => invoked(),
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      ...(options.routes ? { routes: options.routes } : {}),
      ...(options.lazyHandlers ? { lazyHandlers: true } : {}),
      ...(sandbox ? { sandboxUrl: sandbox.url } : {}),
    });
    stops.push(() => http.close());
    listening.notificationUrl = `${http.url}${eventsPath('gateway_b')}`;
    sandbox?.deliverEventsTo(http.url);
    stops.push(async () => dynamo.client.destroy());
    const dispatcherLogger = createLogger({ level: options.logLevel ?? config.logLevel });
    // Its own logger: the shared one carries the context of whichever request the server handled last.
    const delivery = deliveryDeps({ ...deps, logger: dispatcherLogger });
    const queue = new LocalDeliveryQueue(
      delivery,
      undefined,
      options.inMemory ? undefined : join(dataDir, 'delivery-queue.json'),
    );
    // Messages queued before a restart, as SQS would still hold them.
    await queue.restore();
    const dispatcher = await startDispatcher({
      dynamo: dynamo.client,
      endpoint,
      region: config.region,
      receiptsTable: requireAllTables(config).receipts,
      deps: { ...delivery, queue },
      redeliver: () => queue.redeliver(),
      logger: dispatcherLogger,
      intervalMs: options.dispatcherIntervalMs ?? DEFAULT_DISPATCHER_INTERVAL_MS,
      ...(options.sweepIntervalMs ? { sweepIntervalMs: options.sweepIntervalMs } : {}),
      ...(options.dispatcherIdleIntervalMs ? { idleIntervalMs: options.dispatcherIdleIntervalMs } : {}),
      ...(options.dispatcherSchedule ? { schedule: options.dispatcherSchedule } : {}),
      ...(options.inMemory ? {} : { checkpointFile: join(dataDir, 'receipts-stream.json') }),
    });
    // A request may have written a receipt, and a test's clock move may have made a retry due: the
    // dispatcher looks at once rather than on its idle back-off.
    invoked = () => dispatcher.nudge();
    if (clock instanceof ManualClock) {
      const unsubscribe = clock.onMove(() => dispatcher.nudge({ sweep: true }));
      stops.push(async () => void unsubscribe());
    }
    // Before the database client goes: a cycle under way finishes first, then the attempts it queued.
    stops.push(() => queue.drain());
    stops.push(() => dispatcher.close());
    return {
      url: http.url,
      config,
      deps,
      dynamoDbEndpoint: endpoint,
      sandbox,
      cardTagKeys,
      dispatcher,
      deliveryQueue: queue,
      adapterCpuMicros: () => http.adapterCpuMicros(),
      close: async () => {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}
