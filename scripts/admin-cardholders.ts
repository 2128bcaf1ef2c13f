import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cardholderUsage, CardholderUsageError } from './admin/usage.js';
import { retagCardRecords, rotateCardTagKey, type CardKeyAdminDeps } from './admin/card-tags.js';
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { backfillEvidence } from '../lib/receipts/evidence-backfill.js';
import { migrateReceiptsToShards } from '../lib/receipts/migrate-sharded.js';
import { legacyReceiptsTableName, prefixedTableNames } from '../lib/kernel/tables.js';
import { auditStoredKeys } from './admin/keys.js';
import { serviceEnvSchema } from '../lib/kernel/config.js';
import { unbindUser, UnknownUserError } from './admin/users.js';
import { systemClock } from '../lib/kernel/clock.js';
import {
  CardTagKeyring,
  CardTagKeyError,
  formatCardTagVersions,
  parseCardTagVersions,
  withNewVersion,
  type CardTagKeyStore,
  type CardTagKeyVersion,
} from '../lib/crypto/card-tag.js';
import { AuditLog } from '../lib/db/audit.js';
import { createDynamoClients } from '../lib/db/client.js';
import {
  GetSecretValueCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { LocalCardTagKeyFile } from '../local/card-tag-key.js';

interface Target {
  doc: CardKeyAdminDeps['doc'];
  client: DynamoDBClient;
  /** The receipts table before issue 40, for `receipts migrate`. */
  legacyReceipts: string | undefined;
  tables: { users: string; keyPairs: string; receipts: string; audit: string; evidence: string };
  store: () => Promise<CardTagKeyStore>;
}

async function localTarget(): Promise<Target> {
  const dataDir = process.env.LOCAL_DATA_DIR ?? join(process.cwd(), '.local-data');
  const state = await readFile(join(dataDir, 'stack.json'), 'utf8').then(
    (text) => JSON.parse(text) as { dynamoDbEndpoint: string; tablePrefix: string; inMemory?: boolean },
    () => {
      throw new CardholderUsageError(
        'No local stack found: start it with `npm start` first (or pass --aws).',
      );
    },
  );
  if (state.inMemory)
    throw new CardholderUsageError(
      'The local stack runs --in-memory: its card-tag key is not on disk to rotate.',
    );
  const prefix = state.tablePrefix;
  const { doc, client } = createDynamoClients({
    region: process.env.AWS_REGION ?? 'us-east-1',
    endpoint: state.dynamoDbEndpoint,
  });
  return {
    doc,
    client,
    legacyReceipts: `${prefix}${legacyReceiptsTableName}`,
    tables: {
      users: `${prefix}users`,
      keyPairs: `${prefix}key-pairs`,
      receipts: prefixedTableNames(prefix).receipts,
      audit: `${prefix}audit`,
      evidence: `${prefix}evidence`,
    },
    store: () => LocalCardTagKeyFile.loadOrCreate(dataDir),
  };
}

function awsTarget(): Target {
  const env = process.env;
  const region = env.AWS_REGION;
  const tables = {
    users: env.TABLE_USERS,
    keyPairs: env.TABLE_KEY_PAIRS,
    receipts: env.TABLE_RECEIPTS,
    audit: env.TABLE_AUDIT,
    evidence: env.TABLE_EVIDENCE,
  };
  const missing = Object.entries({ AWS_REGION: region, ...tables }).filter(([, value]) => !value);
  if (!region || missing.length > 0)
    throw new CardholderUsageError(
      `--aws needs ${missing.map(([name]) => name).join(', ')} in the environment`,
    );
  const { doc, client } = createDynamoClients({ region });
  return {
    doc,
    client,
    legacyReceipts: env.TABLE_RECEIPTS_LEGACY,
    tables: tables as Target['tables'],
    store: async () => {
      if (!env.CARD_TAG_SECRET_NAME)
        throw new CardholderUsageError('--aws card-key needs CARD_TAG_SECRET_NAME in the environment');
      return awsCardTagKeyStore(region, env.CARD_TAG_SECRET_NAME);
    },
  };
}

/** The functions' claim window (evidence buckets are as wide), as the deployment sets it. */
const claimWindowMs = (): number =>
  serviceEnvSchema.shape.CLAIM_WINDOW_MINUTES.parse(process.env.CLAIM_WINDOW_MINUTES) * 60_000;

/** `card-key …`, `users …`, `keys …` and `evidence …`: the operator's cardholder commands. */
export async function runCardholderCommand(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      user: { type: 'string' },
      reason: { type: 'string' },
      json: { type: 'boolean', default: false },
      aws: { type: 'boolean', default: false },
      'remove-orphans': { type: 'boolean', default: false },
    },
  });
  const [group, command] = positionals;
  const valid =
    (group === 'card-key' && (command === 'rotate' || command === 'retag')) ||
    (group === 'users' && command === 'unbind') ||
    (group === 'keys' && command === 'audit') ||
    (group === 'evidence' && command === 'backfill') ||
    (group === 'receipts' && command === 'migrate');
  if (!valid) throw new CardholderUsageError(cardholderUsage);
  if (group === 'users' && (!values.user || !values.reason?.trim()))
    throw new CardholderUsageError('users unbind needs --user USER_ID and --reason TEXT');
  const target = values.aws ? awsTarget() : await localTarget();
  const audit = new AuditLog(target.doc, () => target.tables.audit, systemClock, 400);
  const print = (human: string, data: unknown) => console.log(values.json ? JSON.stringify(data) : human);

  if (group === 'receipts') {
    if (!target.legacyReceipts)
      throw new CardholderUsageError('--aws receipts migrate needs TABLE_RECEIPTS_LEGACY in the environment');
    const counts = await migrateReceiptsToShards({
      client: target.client,
      doc: target.doc,
      tables: { legacyReceipts: target.legacyReceipts, receipts: target.tables.receipts },
    });
    await audit.record({
      action: 'receipts.migrate',
      outcome: 'success',
      requestId: randomUUID(),
      clientId: 'operator',
      counts: { ...counts },
    });
    print(
      `Copied ${counts.copied} receipts into the sharded receipts table (${counts.alreadyThere} were there already).`,
      counts,
    );
    return;
  }
  if (group === 'evidence') {
    const counts = await backfillEvidence({
      doc: target.doc,
      tables: target.tables,
      keyring: new CardTagKeyring(await (await target.store()).load()),
      widthMs: claimWindowMs(),
      audit,
      // A minute between seeing an entry without its receipt and deleting it: a receipt is stored
      // a moment after its entries.
      ...(values['remove-orphans']
        ? {
            removeOrphans: {
              ...(target.legacyReceipts ? { legacyReceipts: target.legacyReceipts } : {}),
              settle: () => new Promise<void>((resolve) => setTimeout(resolve, 60_000)),
            },
          }
        : {}),
    });
    print(
      `Indexed ${counts.receiptsIndexed} escrowed receipts stored before the evidence index; re-keyed ${counts.entriesRekeyed} entries; named ${counts.entriesNamed} on their receipts${counts.orphansRemoved === undefined ? '' : `; removed ${counts.orphansRemoved} whose receipt is gone`} (${counts.skipped} skipped: facts that do not open, or changed meanwhile).`,
      counts,
    );
    return;
  }
  if (group === 'keys') {
    const report = await auditStoredKeys({ doc: target.doc, tables: target.tables });
    print(
      report.findings.length === 0
        ? `All ${report.keysChecked} stored public keys keep the import rules.`
        : [
            `${report.findings.length} of ${report.keysChecked} stored public keys break the import rules:`,
            ...report.findings.map(
              (finding) =>
                `  ${finding.source.padEnd(8)} ${finding.keyId}  client ${finding.clientId}${finding.userId ? `  user ${finding.userId}` : ''}: ${finding.problem}`,
            ),
          ].join('\n'),
      report,
    );
    return;
  }
  if (group === 'users') {
    try {
      const result = await unbindUser(
        { doc: target.doc, tables: target.tables, audit, now: () => new Date() },
        values.user!,
        values.reason!.trim(),
      );
      print(
        `Unbound user ${result.userId} (client ${result.clientId}). The card can be registered again.`,
        result,
      );
    } catch (error) {
      if (error instanceof UnknownUserError) throw new CardholderUsageError(error.message);
      throw error;
    }
    return;
  }
  const deps: CardKeyAdminDeps = {
    doc: target.doc,
    tables: target.tables,
    store: await target.store(),
    audit,
    widthMs: claimWindowMs(),
  };
  if (command === 'rotate') {
    const { version, counts } = await rotateCardTagKey(deps);
    print(
      `Card-tag key version ${version} is current. Re-tagged ${counts.guards} card guards, ${counts.users} users, ${counts.evidence} evidence entries and ${counts.receipts} escrowed receipts (${counts.skipped} changed meanwhile). Run \`card-key retag\` once functions have read the new version.`,
      { version, ...counts },
    );
    return;
  }
  const counts = await retagCardRecords(deps);
  print(
    `Re-tagged ${counts.guards} card guards, ${counts.users} users, ${counts.evidence} evidence entries and ${counts.receipts} escrowed receipts (${counts.skipped} changed meanwhile).`,
    counts,
  );
}

/**
 * The operator's side (`npm run admin -- card-key rotate --aws`): reads the secret and writes it back
 * with one more version. Functions see it within their 5-minute cache.
 */
function awsCardTagKeyStore(region: string, secretName: string): CardTagKeyStore {
  const client = new SecretsManagerClient({ region });
  const load = async (): Promise<CardTagKeyVersion[]> => {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretName }));
    if (!SecretString) throw new CardTagKeyError('card-tag secret has no string value');
    return parseCardTagVersions(SecretString);
  };
  return {
    load,
    async addVersion() {
      const versions = withNewVersion(await load());
      await client.send(
        new PutSecretValueCommand({
          SecretId: secretName,
          SecretString: formatCardTagVersions(versions),
        }),
      );
      return versions[versions.length - 1]!.version;
    },
  };
}
