import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  checkKeyEnvironment,
  createApiKey,
  EnvironmentMismatchError,
  listApiKeys,
  revokeApiKey,
  setApiKeyTier,
  UnknownKeyError,
  type ApiKeyAdminDeps,
} from './admin/api-keys.js';
import { EdgeMigrationError, migrateEdgeKeys } from './admin/edge-migration.js';
import {
  apiKeyEnvironments,
  deployedApiKeyEnvironment,
  productionStages,
  type ApiKeyEnvironment,
} from '../lib/kernel/config.js';
import { createDynamoClients } from '../lib/db/client.js';
import { ApiKeyRepository } from '../lib/db/api-keys.js';
import type { Role } from '../lib/kernel/route.js';
import { isTierName, tierNames, type TierName } from '../lib/kernel/tiers.js';
import {
  CardholderUsageError,
  cardholderUsage,
  KeyLogUsageError,
  keyLogUsage,
  MerchantUsageError,
  merchantUsage,
} from './admin/usage.js';

const usage = `Usage: npm run admin -- api-keys <command> [options]

Commands:
  create  --name NAME --roles merchant,issuer --tier ${tierNames.join('|')} [--environment ENV] [--json]
  list    [--json]
  revoke  --key-id KEY_ID [--json]
  set-tier --key-id KEY_ID --tier ${tierNames.join('|')} [--json]
  migrate-edge --aws [--delete-old] [--json]
          API Gateway keys made before the edge authorizer hold the whole API key: give every active key
          its usage-identifier key (run before deploying the authorizer), then --delete-old after the
          deploy deletes the old keys (see docs/DEPLOY.md, "Edge keys")

Target: the local stack started by \`npm start\` (found through .local-data/stack.json), or a
deployed stack with --aws (needs AWS credentials, AWS_REGION, STAGE and TABLE_API_KEYS; see docs/DEPLOY.md).

Keys belong to the target's environment: rk_local_ on the local stack; with --aws, rk_live_ when
STAGE is ${productionStagesText()} and rk_test_ (staging) otherwise. --environment ${apiKeyEnvironments.join('|')}, when
given, must name that same environment: it guards against creating a key on the wrong stack.

${cardholderUsage}

${merchantUsage}

${keyLogUsage}`;

function productionStagesText(): string {
  return productionStages.map((stage) => `"${stage}"`).join(' or ');
}

class UsageError extends Error {}
/** The CLI's target is not there: one line that says what to do, and exit status 1. */
class NotRunningError extends Error {}

const roles: readonly Role[] = ['merchant', 'issuer'];

function parseRoles(value: string | undefined): Role[] {
  const parsed = (value ?? '')
    .split(',')
    .map((role) => role.trim())
    .filter(Boolean);
  if (parsed.length === 0 || parsed.some((role) => !roles.includes(role as Role))) {
    throw new UsageError(`--roles must list one or more of ${roles.join(', ')}`);
  }
  return [...new Set(parsed)] as Role[];
}

function parseTier(value: string | undefined): TierName {
  if (!value || !isTierName(value)) throw new UsageError(`--tier must be one of ${tierNames.join(', ')}`);
  return value;
}

function parseEnvironment(value: string | undefined): ApiKeyEnvironment | undefined {
  if (value === undefined) return undefined;
  const environment = apiKeyEnvironments.find((candidate) => candidate === value);
  if (!environment) throw new UsageError(`--environment must be one of ${apiKeyEnvironments.join(', ')}`);
  return environment;
}

/** Any HTTP answer will do: DynamoDB Local answers a bare GET with an error body. */
async function answers(endpoint: string): Promise<boolean> {
  try {
    await fetch(endpoint, { signal: AbortSignal.timeout(3_000) });
    return true;
  } catch {
    return false;
  }
}

async function localDeps(): Promise<ApiKeyAdminDeps> {
  let endpoint = process.env.DYNAMODB_ENDPOINT;
  let prefix = process.env.TABLE_PREFIX ?? 'local-';
  if (!endpoint) {
    const stateFile = join(process.env.LOCAL_DATA_DIR ?? join(process.cwd(), '.local-data'), 'stack.json');
    const state = await readFile(stateFile, 'utf8').then(
      (text) => JSON.parse(text) as { dynamoDbEndpoint: string; tablePrefix: string },
      () => {
        throw new UsageError(
          'No local stack found: start it with `npm start` first (or pass --aws for a deployed stack).',
        );
      },
    );
    endpoint = state.dynamoDbEndpoint;
    prefix = state.tablePrefix;
  }
  // stack.json outlives the stack it describes; without this check a stopped stack surfaces as the
  // SDK's bare `connect ECONNREFUSED` after its retries.
  if (!(await answers(endpoint))) {
    throw new NotRunningError(
      `The local stack is not running: start it with \`npm start\` (no DynamoDB at ${endpoint})`,
    );
  }
  const { doc } = createDynamoClients({ region: process.env.AWS_REGION ?? 'us-east-1', endpoint });
  return {
    repository: new ApiKeyRepository(doc, `${prefix}api-keys`),
    environment: 'local',
    now: () => new Date(),
  };
}

async function awsDeps(): Promise<ApiKeyAdminDeps> {
  const table = process.env.TABLE_API_KEYS;
  const region = process.env.AWS_REGION;
  const stage = process.env.STAGE;
  if (!table || !region || !stage)
    throw new UsageError('--aws needs TABLE_API_KEYS, AWS_REGION and STAGE in the environment');
  const { doc } = createDynamoClients({ region });
  return {
    repository: new ApiKeyRepository(doc, table),
    edge: await (await import('./admin-aws.js')).awsEdgeKeyStore(region, stage),
    environment: deployedApiKeyEnvironment(stage),
    now: () => new Date(),
  };
}

async function main(argv: string[]): Promise<void> {
  // Card-tag keys and users have their own commands and options (scripts/admin-cardholders.ts), loaded
  // only when asked for, as the --aws clients are: `api-keys` starts in half the time.
  const first = argv.find((arg) => !arg.startsWith('-'));
  if (
    first === 'card-key' ||
    first === 'users' ||
    first === 'keys' ||
    first === 'evidence' ||
    first === 'receipts'
  )
    return (await import('./admin-cardholders.js')).runCardholderCommand(argv);
  if (first === 'merchants') {
    await (await import('./admin-merchants.js')).runMerchantCommand(argv);
    return;
  }
  if (first === 'key-log') {
    await (await import('./admin-key-log.js')).runKeyLogCommand(argv);
    return;
  }
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      roles: { type: 'string' },
      tier: { type: 'string' },
      'key-id': { type: 'string' },
      'delete-old': { type: 'boolean', default: false },
      environment: { type: 'string' },
      json: { type: 'boolean', default: false },
      aws: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const [group, command] = positionals;
  if (values.help || group !== 'api-keys' || !command) throw new UsageError(usage);
  // Checked before connecting, so a wrong environment is named even when the target is down.
  const environment = parseEnvironment(values.environment);
  if (command === 'create' && values.aws && !process.env.STAGE)
    throw new UsageError('--aws needs TABLE_API_KEYS, AWS_REGION and STAGE in the environment');
  checkKeyEnvironment(values.aws ? deployedApiKeyEnvironment(process.env.STAGE ?? '') : 'local', environment);
  // The local stack has no API Gateway: nothing there to migrate.
  if (command === 'migrate-edge' && !values.aws)
    throw new UsageError('migrate-edge works on a deployed stack: add --aws');
  const deps = values.aws ? await awsDeps() : await localDeps();
  const print = (human: string, data: unknown) => console.log(values.json ? JSON.stringify(data) : human);
  switch (command) {
    case 'create': {
      if (!values.name?.trim()) throw new UsageError('--name is required');
      const created = await createApiKey(deps, {
        name: values.name.trim(),
        roles: parseRoles(values.roles),
        tier: parseTier(values.tier),
        ...(environment ? { environment } : {}),
      });
      print(
        `${created.record.environment} API key for "${created.record.name}" (client ${created.record.clientId}, roles ${created.record.roles.join(',')}, tier ${created.record.tier}):\n\n  ${created.apiKey}\n\nIt is shown only now; store it safely. Key id: ${created.record.keyId}`,
        { apiKey: created.apiKey, ...created.record },
      );
      return;
    }
    case 'list': {
      const keys = await listApiKeys(deps);
      print(
        keys.length === 0
          ? 'No API keys yet.'
          : keys
              .map(
                (key) =>
                  `${key.keyId}  ${key.environment.padEnd(5)}  ${key.status.padEnd(7)}  ${key.tier.padEnd(10)}  ${key.roles.join(',').padEnd(15)}  ${key.name}`,
              )
              .join('\n'),
        keys,
      );
      return;
    }
    case 'revoke': {
      if (!values['key-id']) throw new UsageError('--key-id is required');
      const revoked = await revokeApiKey(deps, values['key-id']);
      print(`Revoked ${revoked.keyId} (${revoked.name}).`, revoked);
      return;
    }
    case 'migrate-edge': {
      if (!deps.edge) throw new UsageError('migrate-edge works on a deployed stack: add --aws');
      const report = await migrateEdgeKeys(
        { repository: deps.repository, edge: deps.edge },
        { deleteOld: values['delete-old'] },
      );
      const old = report.oldKeys.length;
      print(
        [
          `${report.moved.length} key(s) moved to their usage-identifier key, ${report.unchanged.length} already there.`,
          old === 0
            ? 'No old API Gateway key is left.'
            : report.deleted
              ? `Deleted ${old} old API Gateway key(s).`
              : `${old} old API Gateway key(s) still hold API keys: deploy the stack, then run migrate-edge --aws --delete-old.`,
        ].join('\n'),
        report,
      );
      return;
    }
    case 'set-tier': {
      if (!values['key-id']) throw new UsageError('--key-id is required');
      const updated = await setApiKeyTier(deps, values['key-id'], parseTier(values.tier));
      print(`${updated.keyId} (${updated.name}) is now on tier ${updated.tier}.`, updated);
      return;
    }
    default:
      throw new UsageError(usage);
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (error: unknown) => {
    if (
      error instanceof UsageError ||
      error instanceof UnknownKeyError ||
      error instanceof NotRunningError ||
      error instanceof EnvironmentMismatchError ||
      error instanceof EdgeMigrationError ||
      error instanceof CardholderUsageError ||
      error instanceof MerchantUsageError ||
      error instanceof KeyLogUsageError
    ) {
      console.error(error.message);
    } else console.error(`admin failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(
      error instanceof UsageError ||
        error instanceof EnvironmentMismatchError ||
        error instanceof CardholderUsageError ||
        error instanceof MerchantUsageError ||
        error instanceof KeyLogUsageError
        ? 2
        : 1,
    );
  },
);
