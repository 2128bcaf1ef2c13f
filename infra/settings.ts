import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import * as z from 'zod';
import {
  deployedApiKeyEnvironment,
  isLiveStripeKey,
  isProductionStage,
  liveGatewayCredentialRefusal,
  serviceEnvSchema,
  type ApiKeyEnvironment,
} from '../lib/kernel/config.js';
import { METRIC_NAMESPACE } from '../lib/kernel/telemetry.js';
import { rateGroups, tierNames, tiers as serviceTiers, type TierTable } from '../lib/kernel/tiers.js';

/**
 * Deployment settings. Each one comes from stack props, else from CDK context (`cdk.json` or
 * `cdk deploy -c key=value`), else from the default here, so `cdk deploy` works with no flags.
 * Service knobs reuse the schema the functions validate their environment with, so a value the
 * functions would reject fails synth instead of the first request.
 */
const fromText = (value: unknown): unknown => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
};

// `-c flag=false` arrives as the string "false", which z.coerce.boolean() would read as true.
const flag = z.preprocess(fromText, z.boolean());

const tierSchema = z.object({
  ratePerSecond: z.number().positive(),
  burst: z.number().int().min(1),
  dailyQuota: z.number().int().min(1),
  requestsPerMinute: z.strictObject(
    Object.fromEntries(rateGroups.map((group) => [group, z.number().int().min(1)])),
  ),
});

const tierOverrides = z.preprocess(
  fromText,
  z.strictObject(Object.fromEntries(tierNames.map((tier) => [tier, tierSchema.partial().optional()]))),
);

/**
 * The functions that take a card payment, a refund or the provider's word on one: reserved concurrency
 * keeps a flood of other requests (encrypts, decrypts) from taking the account's executions from them.
 */
export const paymentFunctionNames = ['create-payment', 'create-refund', 'gateway-events'] as const;
export type PaymentFunctionName = (typeof paymentFunctionNames)[number];

/**
 * What a production stage reserves when the setting is not given (docs/SCALE.md, "Lambda concurrency"):
 * one enterprise merchant's payment allowance (250 a second) at ~450 ms a payment is ~113 executions,
 * so 150 with room; refunds and the providers' events are a fraction of that and fast.
 */
export const defaultPaymentReservedConcurrency: Readonly<Record<PaymentFunctionName, number>> = {
  'create-payment': 150,
  'create-refund': 20,
  'gateway-events': 30,
};

const reservedConcurrency = z.preprocess(
  fromText,
  z.strictObject(
    Object.fromEntries(
      paymentFunctionNames.map((name) => [name, z.number().int().min(1).max(10_000).optional()]),
    ) as Record<PaymentFunctionName, z.ZodOptional<z.ZodNumber>>,
  ),
);

const alarmThreshold = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

const retentionValues = Object.values(RetentionDays).filter(
  (value): value is number => typeof value === 'number',
);

const settingsSchema = z.object({
  stage: z
    .string()
    .regex(
      /^[a-z][a-z0-9-]{0,19}$/,
      'lower-case letters, digits and dashes, starting with a letter, at most 20',
    )
    // `local` is the stage of `npm start`; a deployment named like it could pass for it wherever a
    // stage name is read, so none may be (the local stack's looser webhook guard never ships anyway).
    .refine(
      (stage) => !/^local(?:$|-)/.test(stage),
      'names the local stack (`npm start`); a deployed stage must be named otherwise, e.g. dev or staging',
    ),
  tiers: tierOverrides.optional(),
  logLevel: serviceEnvSchema.shape.LOG_LEVEL,
  logRetentionDays: z.coerce
    .number()
    .refine(
      (days) => retentionValues.includes(days),
      `one of CloudWatch's retention periods: ${retentionValues.join(', ')}`,
    )
    // A year of function and access logs: the window an incident or a dispute is investigated in.
    .default(RetentionDays.ONE_YEAR),
  tokenTtlSeconds: serviceEnvSchema.shape.TOKEN_TTL_SECONDS,
  apiKeyCacheTtlSeconds: serviceEnvSchema.shape.API_KEY_CACHE_TTL_SECONDS,
  anonymousRequestsPerMinute: serviceEnvSchema.shape.ANON_RATE_LIMIT_PER_MINUTE,
  receiptRetentionDays: serviceEnvSchema.shape.RECEIPT_RETENTION_DAYS,
  escrowRetentionDays: serviceEnvSchema.shape.ESCROW_RETENTION_DAYS,
  auditRetentionDays: serviceEnvSchema.shape.AUDIT_RETENTION_DAYS,
  stripeSecretName: z.string().min(1).optional(),
  squareSecretName: z.string().min(1).optional(),
  squareLocationId: z.preprocess((value) => (value === '' ? undefined : value), z.string().min(1).optional()),
  /** Secrets Manager names of the providers' webhook signing secrets (docs/DEPLOY.md). */
  stripeWebhookSecretName: z.string().min(1).optional(),
  squareWebhookSecretName: z.string().min(1).optional(),
  /**
   * The notification URL the Square webhook subscription is registered with (Square signs it with the
   * body); unset: the stage's own events URL on execute-api. Set it when a custom domain fronts the API.
   */
  squareWebhookUrl: z.preprocess((value) => (value === '' ? undefined : value), z.url().optional()),
  squareEnvironment: z.enum(['sandbox', 'production']).default('sandbox'),
  alarmEmail: z.preprocess((value) => (value === '' ? undefined : value), z.email().optional()),
  apiGatewayCloudWatchRole: flag.default(true),
  /** Health and openapi.json have no API key, hence no usage plan: this stage throttle caps them. */
  publicRouteRateLimit: z.coerce.number().positive().default(20),
  publicRouteBurstLimit: z.coerce.number().int().min(1).default(40),
  /** The WAF's per-source limit on the gateways' events route (infra/edge-waf.ts; WAF's minimum is 10). */
  gatewayEventsPerSourcePerMinute: z.coerce.number().int().min(10).default(600),
  /**
   * The providers' published webhook source addresses (IPv4 CIDRs, e.g. Stripe's and Square's
   * lists): when set, the events route answers only them at the edge. `-c gatewayEventSourceCidrs='[...]'`.
   */
  gatewayEventSourceCidrs: z.preprocess(fromText, z.array(z.cidrv4()).max(1_000)).default([]),
  dashboard: flag.default(true),
  /**
   * X-Ray for the stage. `sdk`: Lambda's active tracing, API Gateway's, and the Powertools Tracer in
   * every function (a subsegment per AWS call). `lambda`: the same without the Tracer in the functions
   * (each invocation's init and duration only; no X-Ray SDK import, and none of its async hooks, which
   * make every await dearer). `off`: no tracing (PassThrough; no X-Ray write policy).
   */
  tracing: z.enum(['sdk', 'lambda', 'off']).default('sdk'),
  /**
   * Reserved concurrent executions per payment function (`-c paymentReservedConcurrency='{"create-payment":300}'`,
   * `'{}'` for none). Unset: a production stage reserves defaultPaymentReservedConcurrency, any other
   * stage nothing (a test account's concurrency quota is often too small to reserve from: Lambda keeps
   * 100 executions unreserved).
   */
  paymentReservedConcurrency: reservedConcurrency.optional(),
  /** Security alarms: answers (or refusals) in five minutes at which someone should look. */
  unauthorizedAlarmThreshold: alarmThreshold(50),
  forbiddenAlarmThreshold: alarmThreshold(50),
  decryptionErrorAlarmThreshold: alarmThreshold(20),
  grantErrorAlarmThreshold: alarmThreshold(20),
  registerConflictAlarmThreshold: alarmThreshold(1),
  reRegistrationAlarmThreshold: alarmThreshold(1),
});

export type SettingsInput = Partial<z.input<typeof settingsSchema>>;

type Parsed = z.output<typeof settingsSchema>;

export interface ServiceSettings extends Omit<
  Parsed,
  | 'tiers'
  | 'stripeSecretName'
  | 'squareSecretName'
  | 'stripeWebhookSecretName'
  | 'squareWebhookSecretName'
  | 'logRetentionDays'
  | 'paymentReservedConcurrency'
> {
  tiers: TierTable;
  /** True when the usage plans differ from lib/kernel/tiers.ts, which the service's own limiter still reads. */
  tiersOverridden: boolean;
  logRetentionDays: RetentionDays;
  stripeSecretName: string;
  squareSecretName: string;
  stripeWebhookSecretName: string;
  squareWebhookSecretName: string;
  /** Resource names start with this; DynamoDB tables are `${resourcePrefix}-${table}`. */
  resourcePrefix: string;
  /**
   * The CloudWatch namespace the functions publish their counts in (POWERTOOLS_METRICS_NAMESPACE), one
   * per stage, so that two stages in one account never add to each other's alarms.
   */
  metricNamespace: string;
  /** From the stage, never set apart from it, so the admin CLI derives the same (lib/kernel/config.ts). */
  apiKeyEnvironment: Exclude<ApiKeyEnvironment, 'local'>;
  /** Reserved concurrent executions of the payment functions that have one. */
  paymentReservedConcurrency: Partial<Record<PaymentFunctionName, number>>;
}

export const settingKeys = Object.keys(settingsSchema.shape) as (keyof SettingsInput)[];

export class SettingsError extends Error {}

/**
 * Live gateway credentials at synth: a stage other than production refuses Square's production
 * environment and any live Stripe key in any setting (DECISIONS Round 3); the functions refuse them
 * again when they read their secrets.
 */
function liveCredentialProblems(values: Parsed): string[] {
  const problems: string[] = [];
  for (const [setting, value] of Object.entries(values)) {
    if (typeof value !== 'string' || !isLiveStripeKey(value)) continue;
    problems.push(
      liveGatewayCredentialRefusal(values.stage, { setting, stripeKey: value }) ??
        // Production may use live keys, but from Secrets Manager: a key in a setting lands in the template.
        `${setting}: holds a Stripe key; put the key in Secrets Manager and name the secret in stripeSecretName`,
    );
  }
  const square = liveGatewayCredentialRefusal(values.stage, {
    setting: 'squareEnvironment',
    squareEnvironment: values.squareEnvironment,
  });
  if (square) problems.push(square);
  return problems;
}

/** Props win over context, context over defaults. */
export function resolveSettings(scope: Construct, overrides: SettingsInput = {}): ServiceSettings {
  const fromContext: Record<string, unknown> = {};
  for (const key of settingKeys) {
    const value: unknown = scope.node.tryGetContext(key);
    if (value !== undefined) fromContext[key] = value;
  }
  const definedOverrides = Object.fromEntries(
    Object.entries(overrides).filter(([, value]) => value !== undefined),
  );
  const parsed = settingsSchema.safeParse({ stage: 'dev', ...fromContext, ...definedOverrides });
  if (!parsed.success) {
    const issues = parsed.error.issues.map(
      (issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`,
    );
    throw new SettingsError(`Invalid receipt-service settings: ${issues.join('; ')}`);
  }
  const credentialProblems = liveCredentialProblems(parsed.data);
  if (credentialProblems.length > 0)
    throw new SettingsError(`Invalid receipt-service settings: ${credentialProblems.join('; ')}`);
  const { tiers: overriddenTiers, paymentReservedConcurrency, ...values } = parsed.data;
  const tiers = Object.fromEntries(
    tierNames.map((tier) => [tier, { ...serviceTiers[tier], ...overriddenTiers?.[tier] }]),
  ) as TierTable;
  return {
    ...values,
    tiers,
    tiersOverridden: tierNames.some(
      (tier) => JSON.stringify(tiers[tier]) !== JSON.stringify(serviceTiers[tier]),
    ),
    logRetentionDays: values.logRetentionDays as RetentionDays,
    stripeSecretName: values.stripeSecretName ?? `/${values.stage}/receipt-service/stripe-secret-key`,
    squareSecretName: values.squareSecretName ?? `/${values.stage}/receipt-service/square-access-token`,
    stripeWebhookSecretName:
      values.stripeWebhookSecretName ?? `/${values.stage}/receipt-service/stripe-webhook-secret`,
    squareWebhookSecretName:
      values.squareWebhookSecretName ?? `/${values.stage}/receipt-service/square-webhook-signature-key`,
    resourcePrefix: `receipt-service-${values.stage}`,
    metricNamespace: `${METRIC_NAMESPACE}/${values.stage}`,
    apiKeyEnvironment: deployedApiKeyEnvironment(values.stage),
    paymentReservedConcurrency:
      paymentReservedConcurrency ??
      (isProductionStage(values.stage) ? { ...defaultPaymentReservedConcurrency } : {}),
  };
}
