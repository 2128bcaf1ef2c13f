import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assemblyTemplates, synthesizeApp, type TemplateJson } from '../infra/cloud-assembly.js';

/**
 * docs/DEPLOY.md's "Cost at rest" and what "Tearing down" keeps, computed from the synthesized
 * stacks and bench/prices.json, so the page follows the stacks instead of being counted by hand.
 *
 *   npm run deploy-costs               synthesizes the app and rewrites the two blocks of the page
 *   npm run deploy-costs -- --check    writes nothing; exits 1 while the page is not what it would write
 *
 * The synthesis is the infra tests' (stage `test`, default settings, esbuild skipped), and
 * test/infra/deploy-costs.test.ts fails when the page and that synthesis disagree. Resource names
 * are shown with the stage as `<stage>`. Every resource type must be priced below or named free at
 * rest in FREE_AT_REST: a type this script does not know stops it, so a new kind of resource cannot
 * slip past the page unpriced.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
export const deployPage = join(root, 'docs', 'DEPLOY.md');
export const pricesFile = join(root, 'bench', 'prices.json');
/** The stage the infra tests synthesize (test/infra/support.ts), whose names are shown as `<stage>`. */
export const SYNTH_STAGE = 'test';

export interface PriceTable {
  region: string;
  date: string;
  currency: string;
  prices: Record<string, { value: number; unit: string }>;
}

export const readPrices = (): PriceTable => JSON.parse(readFileSync(pricesFile, 'utf8')) as PriceTable;

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
  DeletionPolicy?: string;
}

/** Resource types that cost nothing while no request is made, by prefix, with the reason shown. */
const FREE_AT_REST: readonly { prefix: string; label: string }[] = [
  { prefix: 'AWS::Lambda::Function', label: 'Lambda functions' },
  { prefix: 'AWS::Lambda::', label: 'Lambda permissions and event source mappings' },
  { prefix: 'AWS::ApiGateway::', label: 'API Gateway resources (the API, its methods, usage plans)' },
  { prefix: 'AWS::SQS::', label: 'SQS queues and their policies' },
  { prefix: 'AWS::Events::', label: 'EventBridge rules' },
  { prefix: 'AWS::SNS::', label: 'SNS topics and subscriptions' },
  { prefix: 'AWS::IAM::', label: 'IAM roles and policies' },
  { prefix: 'AWS::KMS::Alias', label: 'KMS aliases' },
  { prefix: 'AWS::Logs::MetricFilter', label: 'log metric filters' },
  { prefix: 'AWS::CDK::Metadata', label: 'CDK metadata' },
  { prefix: 'AWS::WAFv2::WebACLAssociation', label: "the web ACL's association with the stage" },
];

/** What a teardown leaves, by type: the word for one of them. */
const KEPT_LABELS: Record<string, string> = {
  'AWS::DynamoDB::Table': 'DynamoDB tables (deletion protection on)',
  'AWS::KMS::Key': 'KMS keys',
  'AWS::SecretsManager::Secret': 'Secrets Manager secrets',
  'AWS::Logs::LogGroup': 'CloudWatch log groups (their contents expire by their retention)',
  'AWS::IAM::Role': "IAM roles (API Gateway's account-level logging role)",
  'AWS::ApiGateway::Account': "API Gateway's account settings (the logging role above)",
};

const usd = (amount: number) => `$${amount.toFixed(2)}`;
const code = (text: string) => `\`${text}\``;
/** A table's or secret's name without the stage's prefix, as the rest of the page names them. */
const short = (name: string) => name.replace(/^receipt-service-<stage>-/, '');

/** A physical name as the page shows it: the stage as `<stage>`. */
const staged = (name: string) =>
  name
    .replaceAll(`receipt-service-${SYNTH_STAGE}-`, 'receipt-service-<stage>-')
    .replaceAll(`/${SYNTH_STAGE}/`, '/<stage>/')
    .replace(new RegExp(`^receipt-service ${SYNTH_STAGE}: `), '');

function resourcesOf(stacks: Record<string, TemplateJson>): Resource[] {
  return Object.keys(stacks)
    .sort()
    .flatMap((name) => Object.values(stacks[name]?.Resources ?? {}) as Resource[]);
}

const ofType = (resources: readonly Resource[], type: string) =>
  resources.filter((resource) => resource.Type === type);

const retained = (resource: Resource) =>
  resource.DeletionPolicy === 'Retain' || resource.DeletionPolicy === 'RetainExceptOnCreate';

/** The secrets the functions read by a name the stacks do not make: the operator creates them. */
function externalSecretNames(resources: readonly Resource[]): string[] {
  const names = new Set<string>();
  for (const fn of ofType(resources, 'AWS::Lambda::Function')) {
    const variables = (fn.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)
      ?.Variables;
    for (const [name, value] of Object.entries(variables ?? {})) {
      if (name.endsWith('_SECRET_NAME') && typeof value === 'string') names.add(value);
    }
  }
  const made = new Set(
    ofType(resources, 'AWS::SecretsManager::Secret').map((secret) => secret.Properties?.Name),
  );
  return [...names].filter((name) => !made.has(name)).sort();
}

/** Alarm metrics as CloudWatch bills them: a metric-math alarm counts each metric it reads. */
function alarmMetrics(alarm: Resource): { standard: number; highResolution: number } {
  const properties = alarm.Properties ?? {};
  const metrics = properties.Metrics as { MetricStat?: { Period?: number } }[] | undefined;
  const periods = metrics
    ? metrics.filter((metric) => metric.MetricStat).map((metric) => metric.MetricStat?.Period ?? 60)
    : [Number(properties.Period ?? 60)];
  const highResolution = periods.filter((period) => period < 60).length;
  return { standard: periods.length - highResolution, highResolution };
}

function freeAtRest(type: string) {
  return FREE_AT_REST.find((entry) => type.startsWith(entry.prefix));
}

/** The "Cost at rest" block and the "Tearing down" block, as Markdown. */
export function deployCostBlocks(
  stacks: Record<string, TemplateJson>,
  table: PriceTable,
): { cost: string; teardown: string } {
  const resources = resourcesOf(stacks);
  const price = (name: string): number => {
    const entry = table.prices[name];
    if (!entry) throw new Error(`bench/prices.json has no price ${name}`);
    return entry.value;
  };
  const priced = new Set([
    'AWS::DynamoDB::Table',
    'AWS::KMS::Key',
    'AWS::SecretsManager::Secret',
    'AWS::CloudWatch::Alarm',
    'AWS::CloudWatch::CompositeAlarm',
    'AWS::CloudWatch::Dashboard',
    'AWS::Logs::LogGroup',
    'AWS::SSM::Parameter',
    'AWS::WAFv2::WebACL',
  ]);
  const unknown = [...new Set(resources.map((resource) => resource.Type))].filter(
    (type) => !priced.has(type) && !freeAtRest(type),
  );
  if (unknown.length) {
    throw new Error(
      `scripts/deploy-costs.ts does not know what ${unknown.join(', ')} costs at rest: price it or add it to FREE_AT_REST`,
    );
  }

  const tables = ofType(resources, 'AWS::DynamoDB::Table');
  const onDemand = tables.filter((t) => t.Properties?.BillingMode === 'PAY_PER_REQUEST').length;
  if (onDemand !== tables.length) {
    throw new Error('A table is provisioned: its capacity costs at rest, which this script does not price');
  }
  const pitr = tables.filter(
    (t) =>
      (t.Properties?.PointInTimeRecoverySpecification as { PointInTimeRecoveryEnabled?: boolean } | undefined)
        ?.PointInTimeRecoveryEnabled === true,
  ).length;
  const keys = ofType(resources, 'AWS::KMS::Key');
  const madeSecrets = ofType(resources, 'AWS::SecretsManager::Secret');
  const external = externalSecretNames(resources);
  const alarms = ofType(resources, 'AWS::CloudWatch::Alarm');
  const metrics = alarms.map(alarmMetrics);
  const standard = metrics.reduce((sum, m) => sum + m.standard, 0);
  const highResolution = metrics.reduce((sum, m) => sum + m.highResolution, 0);
  const mathAlarms = alarms.filter((alarm) => alarm.Properties?.Metrics).length;
  const composite = ofType(resources, 'AWS::CloudWatch::CompositeAlarm').length;
  const dashboards = ofType(resources, 'AWS::CloudWatch::Dashboard').length;
  const logGroups = ofType(resources, 'AWS::Logs::LogGroup').length;
  const parameters = ofType(resources, 'AWS::SSM::Parameter');
  const advanced = parameters.filter((p) => p.Properties?.Tier === 'Advanced').length;

  const rows: [string, string, number][] = [];
  rows.push([
    `KMS customer managed keys: ${keys.map((key) => staged(String(key.Properties?.Description ?? 'a key'))).join('; ')}`,
    String(keys.length),
    keys.length * price('kmsKeyMonth'),
  ]);
  rows.push([
    `Secrets Manager secrets: ${madeSecrets.length} the stacks make (${madeSecrets.map((s) => code(staged(String(s.Properties?.Name)))).join(', ')}) and ${external.length} the functions read by name, which you create (${external.map((name) => code(staged(name))).join(', ')})`,
    String(madeSecrets.length + external.length),
    (madeSecrets.length + external.length) * price('secretsManagerSecretMonth'),
  ]);
  rows.push([
    `CloudWatch alarms: ${alarms.length}, of which ${mathAlarms} metric-math alarms (each metric they read is billed)${composite ? `, and ${composite} composite alarms` : ''}`,
    `${standard + highResolution} alarm metrics`,
    standard * price('cloudWatchAlarmMetricMonth') +
      highResolution * price('cloudWatchHighResolutionAlarmMetricMonth') +
      composite * price('cloudWatchCompositeAlarmMonth'),
  ]);
  const webAcls = ofType(resources, 'AWS::WAFv2::WebACL');
  if (webAcls.length) {
    const rules = webAcls.reduce(
      (sum, acl) => sum + ((acl.Properties?.Rules as unknown[] | undefined)?.length ?? 0),
      0,
    );
    rows.push([
      `AWS WAF web ACLs on the stage (${rules} rules; ${usd(price('wafRequestsPerMillion'))} per million requests inspected)`,
      String(webAcls.length),
      webAcls.length * price('wafWebAclMonth') + rules * price('wafRuleMonth'),
    ]);
  }
  rows.push([
    `CloudWatch dashboards (free within the account's first 3; \`-c dashboard=false\` leaves it out)`,
    String(dashboards),
    dashboards * price('cloudWatchDashboardMonth'),
  ]);
  if (parameters.length) {
    rows.push([
      `SSM parameters (${advanced} advanced; standard ones are free)`,
      String(parameters.length),
      advanced * price('ssmAdvancedParameterMonth'),
    ]);
  }
  rows.push([
    `DynamoDB on-demand tables: no request, no charge; storage ${usd(price('dynamoStorageGbMonth'))}/GB-month, and point-in-time recovery ${usd(price('dynamoPitrGbMonth'))}/GB-month on the ${pitr} that have it`,
    String(tables.length),
    0,
  ]);
  rows.push([
    `CloudWatch log groups: ${usd(price('cloudWatchLogsStorageGbMonth'))}/GB-month stored`,
    String(logGroups),
    0,
  ]);
  const free = new Map<string, number>();
  for (const resource of resources) {
    const entry = priced.has(resource.Type) ? undefined : freeAtRest(resource.Type);
    if (entry && entry.prefix !== 'AWS::CDK::Metadata')
      free.set(entry.label, (free.get(entry.label) ?? 0) + 1);
  }
  rows.push([
    `Free at rest (per request only): ${[...free].map(([label, count]) => `${label} ${count}`).join(', ')}`,
    String([...free.values()].reduce((sum, count) => sum + count, 0)),
    0,
  ]);
  const total = rows.reduce((sum, [, , amount]) => sum + amount, 0);
  const withoutDashboards = total - dashboards * price('cloudWatchDashboardMonth');

  const cost = [
    `With no traffic and no data, for a stage with the default settings: ${table.region} list prices of`,
    `${table.date} (bench/prices.json, which says where they come from; check the AWS pricing pages).`,
    '',
    `| item | count | monthly (${table.currency}) |`,
    '|---|---|---|',
    ...rows.map(([item, count, amount]) => `| ${item} | ${count} | ${usd(amount)} |`),
    '',
    `**About ${usd(total)} a month** before any data or traffic (${usd(withoutDashboards)} where the dashboard is`,
    "within the account's free three). KMS requests are charged only when a receipt is unwrapped from",
    'escrow (wrapping uses the cached public key) and when DynamoDB refreshes a table key; Secrets',
    'Manager calls are cached for 300 s.',
  ].join('\n');

  const kept = resources.filter(retained);
  // The order of KEPT_LABELS, then any other type a later stack retains.
  const keptTypes = [
    ...new Set([...Object.keys(KEPT_LABELS), ...kept.map((resource) => resource.Type)]),
  ].filter((type) => kept.some((resource) => resource.Type === type));
  const nameOf = (resource: Resource): string | undefined => {
    const properties = resource.Properties ?? {};
    const name = properties.TableName ?? properties.Name ?? properties.Description;
    return typeof name === 'string' ? staged(name) : undefined;
  };
  const keptRows = keptTypes.map((type) => {
    const ofThisType = kept.filter((resource) => resource.Type === type);
    const names = ofThisType.map(nameOf).filter((name): name is string => name !== undefined);
    const shown =
      type === 'AWS::KMS::Key' ? names.join('; ') : names.map((name) => code(short(name))).join(', ');
    return `| ${KEPT_LABELS[type] ?? type} | ${ofThisType.length} | ${shown} |`;
  });
  const deletedTables = tables
    .filter((t) => !retained(t))
    .map((t) => code(short(staged(String(t.Properties?.TableName)))));
  const deletedCount = resources.filter((r) => !retained(r) && r.Type !== 'AWS::CDK::Metadata').length;
  const teardown = [
    "Kept by `cdk destroy` (CloudFormation's `DeletionPolicy: Retain`), from the synthesized stacks; tables",
    'and secrets are named `receipt-service-<stage>-` and the name shown:',
    '',
    '| kept | count | names |',
    '|---|---|---|',
    ...keptRows,
    '',
    `Deleted with the stacks: the other ${deletedCount} resources, among them the ${deletedTables.length} tables that hold`,
    `only short-lived data (${deletedTables.join(', ')}). The ${external.length} secrets the functions read`,
    'by name are yours: the stacks neither make nor delete them.',
  ].join('\n');
  return { cost, teardown };
}

const marker = (block: string, end: boolean) =>
  end
    ? `<!-- ${block}:end -->`
    : `<!-- ${block}:begin (npm run deploy-costs writes this from the synthesized stacks) -->`;

/** The page with both blocks written anew between their markers. */
export function pageWithCosts(page: string, stacks: Record<string, TemplateJson>, table: PriceTable): string {
  const blocks = deployCostBlocks(stacks, table);
  return (['cost', 'teardown'] as const).reduce((text, block) => {
    const begin = text.indexOf(marker(block, false));
    const end = text.indexOf(marker(block, true));
    if (begin < 0 || end < begin) throw new Error(`docs/DEPLOY.md has no ${block} markers`);
    return `${text.slice(0, begin + marker(block, false).length)}\n${blocks[block]}\n${text.slice(end)}`;
  }, page);
}

/** The app synthesized as the infra tests synthesize it, into a folder removed afterwards. */
export async function synthesizedStacks(): Promise<Record<string, TemplateJson>> {
  const outdir = mkdtempSync(join(tmpdir(), 'receipt-service-deploy-costs-'));
  try {
    const synthesis = await synthesizeApp(root, join(outdir, 'assembly'), {
      stage: SYNTH_STAGE,
      'aws:cdk:bundling-stacks': [],
    });
    // cdk-nag's findings fail the process but the templates are written; anything else is an error.
    try {
      return assemblyTemplates(join(outdir, 'assembly'));
    } catch {
      throw new Error(`cdk synth failed:\n${synthesis.stderr}`);
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const page = readFileSync(deployPage, 'utf8');
  const next = pageWithCosts(page, await synthesizedStacks(), readPrices());
  if (check) {
    console.log(
      next === page ? 'docs/DEPLOY.md: up to date' : 'docs/DEPLOY.md: stale (npm run deploy-costs)',
    );
    process.exitCode = next === page ? 0 : 1;
  } else {
    writeFileSync(deployPage, next);
    console.log('Wrote the cost at rest and teardown of docs/DEPLOY.md');
  }
}

// Not a top-level await: the tests load this file as CommonJS.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
