import * as z from 'zod';
import { tableDefinitions, tableEnvVar, tableKeys, type TableKey, type TableNames } from './tables.js';

/**
 * Service configuration, read from the environment once per cold start. A bad value stops the
 * function (or `npm start`) with a message naming the variable, rather than failing mid-request.
 */
const seconds = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

export const serviceEnvSchema = z.object({
  STAGE: z.string().min(1).default('local'),
  AWS_REGION: z.string().min(1).default('us-east-1'),
  /** Only for DynamoDB Local; unset in AWS. */
  DYNAMODB_ENDPOINT: z.url().optional(),
  /** KMS key id or ARN of the escrow key (deployed); unset locally, where LOCAL_ESCROW_DIR is used. */
  ESCROW_KMS_KEY_ID: z.string().min(1).optional(),
  LOCAL_ESCROW_DIR: z.string().min(1).optional(),
  TOKEN_TTL_SECONDS: seconds(120, 180, 180),
  API_KEY_CACHE_TTL_SECONDS: seconds(0, 300, 30),
  ANON_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(60),
  RECEIPT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(2557),
  ESCROW_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(400),
  LOG_LEVEL: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('INFO'),
});

export type ServiceEnv = z.infer<typeof serviceEnvSchema>;

export interface ServiceConfig {
  stage: string;
  region: string;
  dynamoDbEndpoint: string | undefined;
  /** Only the tables this function was granted; see `requireTable`. */
  tables: Partial<TableNames>;
  escrowKmsKeyId: string | undefined;
  localEscrowDir: string | undefined;
  tokenTtlSeconds: number;
  maxActiveTokens: number;
  apiKeyCacheTtlSeconds: number;
  anonymousRequestsPerMinute: number;
  receiptRetentionDays: number;
  escrowRetentionDays: number;
  auditRetentionDays: number;
  maxBodyBytes: number;
  logLevel: ServiceEnv['LOG_LEVEL'];
}

export class ConfigError extends Error {}

const describeIssues = (error: z.ZodError): string =>
  error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');

/**
 * Table names come from TABLE_* variables (the CDK stack sets only those a function was granted), or
 * all from TABLE_PREFIX locally.
 */
function tableNamesFromEnv(env: NodeJS.ProcessEnv): Partial<TableNames> {
  const prefix = env.TABLE_PREFIX;
  return Object.fromEntries(
    tableKeys.flatMap((key) => {
      const name =
        env[tableEnvVar(key)] ??
        (prefix === undefined ? undefined : `${prefix}${tableDefinitions[key].name}`);
      return name ? [[key, name]] : [];
    }),
  );
}

/** A table's name, or a clear error naming the variable when this function was not given the table. */
export function requireTable(config: Pick<ServiceConfig, 'tables'>, key: TableKey): string {
  const name = config.tables[key];
  if (!name)
    throw new ConfigError(`${tableEnvVar(key)} is not set: this function was not granted the ${key} table`);
  return name;
}

/** Every table's name: the local stack, which creates them all. */
export function requireAllTables(config: Pick<ServiceConfig, 'tables'>): TableNames {
  return Object.fromEntries(tableKeys.map((key) => [key, requireTable(config, key)])) as TableNames;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): ServiceConfig {
  const parsed = serviceEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(`Invalid configuration: ${describeIssues(parsed.error)}`);
  const values = parsed.data;
  return {
    stage: values.STAGE,
    region: values.AWS_REGION,
    dynamoDbEndpoint: values.DYNAMODB_ENDPOINT,
    tables: tableNamesFromEnv(env),
    escrowKmsKeyId: values.ESCROW_KMS_KEY_ID,
    localEscrowDir: values.LOCAL_ESCROW_DIR,
    tokenTtlSeconds: values.TOKEN_TTL_SECONDS,
    maxActiveTokens: 5,
    apiKeyCacheTtlSeconds: values.API_KEY_CACHE_TTL_SECONDS,
    anonymousRequestsPerMinute: values.ANON_RATE_LIMIT_PER_MINUTE,
    receiptRetentionDays: values.RECEIPT_RETENTION_DAYS,
    escrowRetentionDays: values.ESCROW_RETENTION_DAYS,
    auditRetentionDays: values.AUDIT_RETENTION_DAYS,
    maxBodyBytes: 128 * 1024,
    logLevel: values.LOG_LEVEL,
  };
}
