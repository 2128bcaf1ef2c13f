import * as z from 'zod';
import { lazySchema } from './lazy-schema.js';
import { tableDefinitions, tableEnvVar, tableKeys, type TableKey, type TableNames } from './tables.js';

/**
 * Service configuration, read from the environment once per cold start. A bad value stops the
 * function (or `npm start`) with a message naming the variable, rather than failing mid-request.
 */
/**
 * Each environment has its own API keys, and a key names its environment in its prefix: `rk_live_…`
 * (production), `rk_test_…` (staging), `rk_local_…` (the local stack).
 */
export const apiKeyEnvironments = ['live', 'test', 'local'] as const;
export type ApiKeyEnvironment = (typeof apiKeyEnvironments)[number];

/** The stage names that are production; every other deployed stage is staging. */
export const productionStages: readonly string[] = ['prod', 'production'];

/**
 * The key environment of a deployed stage. The CDK stack and the admin CLI (`--aws`) both derive it
 * from the stage name with this one rule, so neither can disagree with the other about a table.
 */
export const deployedApiKeyEnvironment = (stage: string): Exclude<ApiKeyEnvironment, 'local'> =>
  productionStages.includes(stage) ? 'live' : 'test';

export const isProductionStage = (stage: string): boolean => productionStages.includes(stage);

/** Stripe's live secret and restricted keys: they move real money. */
export const isLiveStripeKey = (value: string | undefined): boolean =>
  value !== undefined && /^(sk|rk)_live_/.test(value.trim());

/**
 * Live gateway credentials belong to production alone: a staging or local stage given a live Stripe
 * key or Square's production environment would charge real cards from a test deployment. The reason,
 * naming the setting, or undefined when the stage may use them.
 */
export function liveGatewayCredentialRefusal(
  stage: string,
  credentials: { setting: string; stripeKey?: string | undefined; squareEnvironment?: string | undefined },
): string | undefined {
  if (isProductionStage(stage)) return undefined;
  if (isLiveStripeKey(credentials.stripeKey))
    return `${credentials.setting}: a live Stripe key (sk_live_/rk_live_) in the non-production stage "${stage}"; use a test key (sk_test_/rk_test_) there`;
  if (credentials.squareEnvironment === 'production')
    return `${credentials.setting}: Square's production environment in the non-production stage "${stage}"; use "sandbox" there`;
  return undefined;
}

const seconds = (min: number, max: number, fallback: number) =>
  z.coerce.number().int().min(min).max(max).default(fallback);

/** Built on first use (the function's init reads it once), not at import. */
export const serviceEnvSchema = lazySchema(() =>
  z.object({
    STAGE: z.string().min(1).default('local'),
    AWS_REGION: z.string().min(1).default('us-east-1'),
    /** Only for DynamoDB Local; unset in AWS. */
    DYNAMODB_ENDPOINT: z.url().optional(),
    /** KMS key id or ARN of the escrow key (deployed); unset locally, where LOCAL_ESCROW_DIR is used. */
    ESCROW_KMS_KEY_ID: z.string().min(1).optional(),
    LOG_KMS_KEY_ID: z.string().min(1).optional(),
    LOCAL_ESCROW_DIR: z.string().min(1).optional(),
    TOKEN_TTL_SECONDS: seconds(120, 180, 180),
    API_KEY_CACHE_TTL_SECONDS: seconds(0, 300, 30),
    /** Set by the CDK stack from the stage (see deployedApiKeyEnvironment); unset on the local stack. */
    API_KEY_ENVIRONMENT: z.enum(apiKeyEnvironments).default('local'),
    ANON_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(60),
    RECEIPT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(2557),
    ESCROW_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(90),
    AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(400),
    LOG_LEVEL: z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT']).default('INFO'),
    /** How long health waits for one dependency before calling it down. */
    HEALTH_CHECK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(3_000),
    /** A claimed transaction matches receipts whose transaction time is within ± this many minutes. */
    CLAIM_WINDOW_MINUTES: z.coerce.number().int().min(1).max(1440).default(15),
    /** Transactions one user's claims may name per UTC day. */
    CLAIM_DAILY_LIMIT: z.coerce.number().int().min(1).max(100_000).default(200),
  }),
);

export type ServiceEnv = z.infer<typeof serviceEnvSchema>;

export interface ServiceConfig {
  stage: string;
  region: string;
  dynamoDbEndpoint: string | undefined;
  /** Only the tables this function was granted; see `requireTable`. */
  tables: Partial<TableNames>;
  escrowKmsKeyId: string | undefined;
  /** The key log's signing key (KMS ECC_NIST_P256), for the routes that declare `logKey`. */
  logKmsKeyId: string | undefined;
  localEscrowDir: string | undefined;
  healthCheckTimeoutMs: number;
  tokenTtlSeconds: number;
  maxActiveTokens: number;
  apiKeyCacheTtlSeconds: number;
  /** The only key environment this service accepts. */
  apiKeyEnvironment: ApiKeyEnvironment;
  anonymousRequestsPerMinute: number;
  receiptRetentionDays: number;
  escrowRetentionDays: number;
  auditRetentionDays: number;
  maxBodyBytes: number;
  logLevel: ServiceEnv['LOG_LEVEL'];
  claimWindowMinutes: number;
  claimDailyLimit: number;
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
  // Credentials given in the environment (the local stack's .env) are checked here, at start; a
  // deployed function reads its own from Secrets Manager, and the gateway registry checks those.
  const refusal =
    liveGatewayCredentialRefusal(values.STAGE, {
      setting: 'STRIPE_SECRET_KEY',
      stripeKey: env.STRIPE_SECRET_KEY,
    }) ??
    liveGatewayCredentialRefusal(values.STAGE, {
      setting: 'SQUARE_ENVIRONMENT',
      squareEnvironment: env.SQUARE_ENVIRONMENT,
    });
  if (refusal) throw new ConfigError(`Invalid configuration: ${refusal}`);
  return {
    stage: values.STAGE,
    region: values.AWS_REGION,
    dynamoDbEndpoint: values.DYNAMODB_ENDPOINT,
    tables: tableNamesFromEnv(env),
    escrowKmsKeyId: values.ESCROW_KMS_KEY_ID,
    logKmsKeyId: values.LOG_KMS_KEY_ID,
    localEscrowDir: values.LOCAL_ESCROW_DIR,
    tokenTtlSeconds: values.TOKEN_TTL_SECONDS,
    healthCheckTimeoutMs: values.HEALTH_CHECK_TIMEOUT_MS,
    maxActiveTokens: 5,
    apiKeyCacheTtlSeconds: values.API_KEY_CACHE_TTL_SECONDS,
    apiKeyEnvironment: values.API_KEY_ENVIRONMENT,
    anonymousRequestsPerMinute: values.ANON_RATE_LIMIT_PER_MINUTE,
    receiptRetentionDays: values.RECEIPT_RETENTION_DAYS,
    escrowRetentionDays: values.ESCROW_RETENTION_DAYS,
    auditRetentionDays: values.AUDIT_RETENTION_DAYS,
    maxBodyBytes: 128 * 1024,
    logLevel: values.LOG_LEVEL,
    claimWindowMinutes: values.CLAIM_WINDOW_MINUTES,
    claimDailyLimit: values.CLAIM_DAILY_LIMIT,
  };
}
