import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { merchantUsage, MerchantUsageError } from './admin/usage.js';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { AuditLog } from '../lib/db/audit.js';
import { createDynamoClients } from '../lib/db/client.js';
import { KeyLogRepository } from '../lib/db/key-log.js';
import { MerchantKeyRepository } from '../lib/db/merchant-keys.js';
import { WebhookDeliveryRepository } from '../lib/db/webhook-deliveries.js';
import { WebhookRepository } from '../lib/db/webhooks.js';
import { systemClock } from '../lib/kernel/clock.js';
import { AppError } from '../lib/kernel/errors.js';
import { resetSigningKeys, setSigningPolicy } from '../lib/merchants/signing-keys.js';

/** Where the command writes: the local stack's tables, a deployed stack's, or a test's. */
export interface MerchantTarget {
  doc: DynamoDBDocumentClient;
  tables: {
    merchantKeys: string;
    audit: string;
    webhooks: string;
    webhookDeliveries: string;
    keyLog: string;
  };
}

async function localTarget(): Promise<MerchantTarget> {
  const dataDir = process.env.LOCAL_DATA_DIR ?? join(process.cwd(), '.local-data');
  const state = await readFile(join(dataDir, 'stack.json'), 'utf8').then(
    (text) => JSON.parse(text) as { dynamoDbEndpoint: string; tablePrefix: string },
    () => {
      throw new MerchantUsageError('No local stack found: start it with `npm start` first (or pass --aws).');
    },
  );
  const { doc } = createDynamoClients({
    region: process.env.AWS_REGION ?? 'us-east-1',
    endpoint: state.dynamoDbEndpoint,
  });
  return {
    doc,
    tables: {
      merchantKeys: `${state.tablePrefix}merchant-keys`,
      audit: `${state.tablePrefix}audit`,
      webhooks: `${state.tablePrefix}webhooks`,
      webhookDeliveries: `${state.tablePrefix}webhook-deliveries`,
      keyLog: `${state.tablePrefix}key-log`,
    },
  };
}

function awsTarget(): MerchantTarget {
  const {
    AWS_REGION: region,
    TABLE_MERCHANT_KEYS: merchantKeys,
    TABLE_AUDIT: audit,
    TABLE_WEBHOOKS: webhooks,
    TABLE_WEBHOOK_DELIVERIES: webhookDeliveries,
    TABLE_KEY_LOG: keyLog,
  } = process.env;
  if (!region || !merchantKeys || !audit || !webhooks || !webhookDeliveries || !keyLog)
    throw new MerchantUsageError(
      '--aws needs AWS_REGION, TABLE_MERCHANT_KEYS, TABLE_AUDIT, TABLE_WEBHOOKS, TABLE_WEBHOOK_DELIVERIES and TABLE_KEY_LOG in the environment',
    );
  return {
    doc: createDynamoClients({ region }).doc,
    tables: { merchantKeys, audit, webhooks, webhookDeliveries, keyLog },
  };
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** `merchants …`: returns what it printed (for --json, the policy); `print` is the console's unless a test keeps it. */
export async function runMerchantCommand(
  argv: string[],
  target?: MerchantTarget,
  print: (line: string) => void = (line) => console.log(line),
): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      client: { type: 'string' },
      off: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      aws: { type: 'boolean', default: false },
    },
  });
  const [group, command] = positionals;
  if (group !== 'merchants' || (command !== 'require-signatures' && command !== 'reset-keys'))
    throw new MerchantUsageError(merchantUsage);
  if (!values.client || !uuid.test(values.client))
    throw new MerchantUsageError(`merchants ${command} needs --client CLIENT_ID (a UUID)`);
  const where = target ?? (values.aws ? awsTarget() : await localTarget());
  const deps = {
    repos: {
      merchantKeys: new MerchantKeyRepository(where.doc, where.tables.merchantKeys),
      webhooks: new WebhookRepository(where.doc, where.tables.webhooks),
      webhookDeliveries: new WebhookDeliveryRepository(where.doc, where.tables.webhookDeliveries),
      keyLog: new KeyLogRepository(where.doc, where.tables.keyLog),
    },
    clock: systemClock,
    audit: new AuditLog(where.doc, () => where.tables.audit, systemClock, 400),
  };
  try {
    if (command === 'reset-keys') {
      const reset = await resetSigningKeys(deps, {
        clientId: values.client,
        requestId: `admin-${Date.now()}`,
      });
      const result = { clientId: values.client, ...reset };
      print(
        values.json
          ? JSON.stringify(result)
          : `Merchant client ${values.client}: ${reset.revokedKids.length} signing key(s) revoked, signatures no ` +
              'longer required; it can register a new key with its API key alone. The merchant was notified.',
      );
      return result;
    }
    const policy = await setSigningPolicy(deps, {
      clientId: values.client,
      requireSignatures: !values.off,
      requestId: `admin-${Date.now()}`,
      authority: 'operator',
    });
    const result = { clientId: values.client, ...policy };
    print(
      values.json
        ? JSON.stringify(result)
        : policy.requireSignatures
          ? `Merchant client ${values.client} must now sign its receipts: unsigned requests are refused.`
          : `Merchant client ${values.client} may send unsigned receipts again.`,
    );
    return result;
  } catch (error) {
    // The use case's refusal (no active key) is the operator's to read, not a crash.
    if (error instanceof AppError) throw new MerchantUsageError(error.message);
    throw error;
  }
}
