import { fileURLToPath } from 'node:url';
import { Annotations, ArnFormat, CfnOutput, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import { Effect, Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Alias, Key } from 'aws-cdk-lib/aws-kms';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
// Apart from the other aws-cdk-lib import, so that this addition merges as a line of its own.
import { Lazy } from 'aws-cdk-lib';
import { edgeAuthorizerFunction } from '../functions/platform/edge-authorizer/function.js';
import { formatKeyedRoutes } from '../lib/api-keys/edge-authorizer.js';
import { rateGroupOf, type FunctionDefinition } from '../lib/kernel/route.js';
import { routes as serviceRoutes, type RouteDeclaration, type RouteDefinition } from '../functions/routes.js';
import { tableEnvVar, type TableKey } from '../lib/kernel/tables.js';
import { tierNames, usagePlanParameterName } from '../lib/kernel/tiers.js';
import type { CardTagSecret } from './card-tag-secret.js';
import type { CursorSecret } from './cursor-secret.js';
import type { ReceiptServiceDataStack } from './data-stack.js';
import { dynamoViaService, type DataTables } from './data-tables.js';
import type { MonitoredFunction } from './monitoring.js';
import { applyServiceNagSuppressions } from './nag-suppressions.js';
import {
  canWrite,
  escrowActions,
  tableKeyReadActions,
  tableKeyWriteActions,
  tableStatements,
} from './permissions.js';
import { ServiceApi } from './service-api.js';
import { WebhookDelivery } from './webhook-delivery.js';
import { webhookDispatchFunction } from '../functions/webhooks/webhook-dispatch/function.js';
import { webhookSweepFunction } from '../functions/webhooks/webhook-sweep/function.js';
import { webhookDeliverFunction } from '../functions/webhooks/webhook-deliver/function.js';
import { DEFAULT_TIMEOUT_SECONDS, pascal, ServiceFunction } from './service-function.js';
import { EdgeWaf, edgeWafSettings } from './edge-waf.js';
import { resolveSettings, type ServiceSettings, type SettingsInput } from './settings.js';

export interface ReceiptServiceStackProps extends StackProps {
  /** The stage's tables, keys, secrets and escrow roles (infra/data-stack.ts). */
  data: ReceiptServiceDataStack;
  /** Overrides context and defaults (see infra/settings.ts). */
  settings?: SettingsInput;
  /** Defaults to functions/routes.ts. */
  routes?: readonly RouteDeclaration[];
  /** Defaults to this repository: where package.json and the route entries are. */
  projectRoot?: string;
}

export const defaultProjectRoot = fileURLToPath(new URL('..', import.meta.url));

/**
 * The code of one stage: one function per route, the API (usage plans, authorizer) and webhook
 * delivery (stream mapping, dead-letter queue, schedule). It refers to the data stack's tables, keys,
 * secret and escrow roles (infra/data-stack.ts) and changes none of them: deploying it never updates
 * the data stack. Alarms and the dashboard are the monitoring stack's (infra/monitoring-stack.ts).
 */
export class ReceiptServiceStack extends Stack {
  readonly settings: ServiceSettings;
  /** The data stack's tables, keys and secret, as this stack's code uses them. */
  readonly data: DataTables;
  readonly escrowKey: Key;
  /** The card-tag key's secret and its customer-managed key. */
  readonly cardTagSecret: CardTagSecret;
  /** The paging cursors' key, read only by the routes that declare `cursors`. */
  readonly cursorSecret: CursorSecret;
  readonly escrowKeyAlias: Alias;
  /** The key log's signing key (the data stack's). */
  readonly logKey: Key;
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  /** API Gateway's authorizer for every keyed method; not a route. */
  readonly edgeAuthorizer: ServiceFunction;
  readonly api: ServiceApi;
  /** The receipts stream's dispatcher, the sweeper's schedule and the dead-letter queue. */
  readonly webhookDelivery: WebhookDelivery;
  /** What the monitoring stack alarms on: every route's function, then the delivery functions. */
  readonly monitoredFunctions: readonly MonitoredFunction[];

  constructor(scope: Construct, id: string, props: ReceiptServiceStackProps) {
    // Unindented: the API's definition is most of this template (well under the 1 MB limit this way).
    super(scope, id, { suppressTemplateIndentation: true, ...props });
    const settings = resolveSettings(this, props.settings);
    this.settings = settings;
    const routes = props.routes ?? serviceRoutes;
    const projectRoot = props.projectRoot ?? defaultProjectRoot;
    const { data } = props;

    Tags.of(this).add('service', 'receipt-service');
    Tags.of(this).add('stage', settings.stage);
    if (settings.tiersOverridden) {
      Annotations.of(this).addWarningV2(
        'receipt-service:tiers-overridden',
        'Usage plans differ from lib/kernel/tiers.ts; the service limiter and X-RateLimit-* headers still use lib/kernel/tiers.ts',
      );
    }

    this.data = data.data;
    this.cardTagSecret = data.cardTagSecret;
    this.escrowKey = data.escrowKey;
    this.escrowKeyAlias = data.escrowKeyAlias;
    this.logKey = data.logKey;
    this.cursorSecret = data.cursorSecret;

    const tracingPolicy =
      settings.tracing === 'off'
        ? undefined
        : new Policy(this, 'TracingPolicy', {
            statements: [
              new PolicyStatement({
                effect: Effect.ALLOW,
                actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
                resources: ['*'],
              }),
            ],
          });

    const functions = new Map<string, ServiceFunction>();
    const reserved = new Map<string, number>(Object.entries(settings.paymentReservedConcurrency));
    for (const route of routes) {
      const fn = new ServiceFunction(this, `${pascal(route.name)}Function`, {
        route,
        projectRoot,
        functionName: `${settings.resourcePrefix}-${route.name}`,
        environment: this.environmentFor(route, settings),
        logRetention: settings.logRetentionDays,
        tracingPolicy,
        // The escrow key's policy names these roles, so they are made beside the key.
        role: data.escrowRoles.get(route.name),
        reservedConcurrency: reserved.get(route.name),
      });
      this.grantRoute(fn, route, settings);
      functions.set(route.name, fn);
    }
    this.functions = functions;

    this.edgeAuthorizer = new ServiceFunction(this, 'EdgeAuthorizerFunction', {
      route: edgeAuthorizerFunction,
      projectRoot,
      functionName: `${settings.resourcePrefix}-${edgeAuthorizerFunction.name}`,
      environment: {
        ...this.environmentFor(edgeAuthorizerFunction, settings),
        // Which methods need a key, and whose budget each spends: the rest are open (lib/api-keys/edge-authorizer.ts).
        EDGE_KEYED_ROUTES: formatKeyedRoutes(
          routes
            .filter((route) => route.apiKeyRequired)
            .map((route) => ({ method: route.method, path: route.path, group: rateGroupOf(route) })),
        ),
      },
      logRetention: settings.logRetentionDays,
      tracingPolicy,
      description:
        'API Gateway authorizer: checks X-API-Key by its hash, names the usage-plan key, reports the rate limits',
    });
    this.grantRoute(this.edgeAuthorizer, edgeAuthorizerFunction, settings);

    // Not routes: the receipts stream's consumer and the scheduled sweeper, granted by table like routes.
    const deliveryFunctions = (
      [
        [webhookDispatchFunction, 'Webhook dispatcher: receipts stream to queued webhook deliveries'],
        [webhookSweepFunction, 'Webhook sweeper: queues the deliveries that are due, every minute'],
        [webhookDeliverFunction, 'Webhook deliverer: one queued attempt, signed, per message'],
      ] as const
    ).map(([definition, description]) => {
      const fn = new ServiceFunction(this, `${pascal(definition.name)}Function`, {
        route: definition,
        projectRoot,
        functionName: `${settings.resourcePrefix}-${definition.name}`,
        environment: this.environmentFor(definition, settings),
        logRetention: settings.logRetentionDays,
        tracingPolicy,
        description,
      });
      this.grantRoute(fn, definition, settings);
      return { definition, fn };
    });
    const [dispatcher, sweeper, deliverer] = deliveryFunctions.map(({ fn }) => fn) as [
      ServiceFunction,
      ServiceFunction,
      ServiceFunction,
    ];
    this.webhookDelivery = new WebhookDelivery(this, 'WebhookDelivery', {
      prefix: settings.resourcePrefix,
      receipts: this.data.tables.receipts,
      receiptsKey: this.data.encryptionKey,
      dispatcher,
      sweeper,
      deliverer,
    });

    this.api = new ServiceApi(this, 'Http', {
      tracing: settings.tracing !== 'off',
      stage: settings.stage,
      resourcePrefix: settings.resourcePrefix,
      routes,
      handlers: new Map(
        [...functions].map(([name, fn]) => [
          name,
          { fn: fn.function, name: `${settings.resourcePrefix}-${name}` },
        ]),
      ),
      authorizer: {
        fn: this.edgeAuthorizer.function,
        name: `${settings.resourcePrefix}-${edgeAuthorizerFunction.name}`,
      },
      tiers: settings.tiers,
      logRetention: settings.logRetentionDays,
      cloudWatchRole: settings.apiGatewayCloudWatchRole,
      publicRouteThrottle: {
        rateLimit: settings.publicRouteRateLimit,
        burstLimit: settings.publicRouteBurstLimit,
      },
    });
    new EdgeWaf(this, 'EdgeWaf', {
      ...edgeWafSettings(settings),
      stageArn: this.api.api.deploymentStage.stageArn,
    });

    this.monitoredFunctions = [
      ...routes.map((route) => ({
        name: route.name,
        fn: (functions.get(route.name) as ServiceFunction).function,
        timeoutSeconds: route.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
      })),
      ...deliveryFunctions.map(({ definition, fn }) => ({
        name: definition.name,
        fn: fn.function,
        timeoutSeconds: definition.timeoutSeconds,
      })),
    ];

    this.addOutputs(settings);

    applyServiceNagSuppressions({ api: this.api.api, ...(tracingPolicy ? { tracingPolicy } : {}) });
  }

  /** Only what this route's code reads: its own tables, escrow key and gateway settings. */
  private environmentFor(route: FunctionDefinition, settings: ServiceSettings): Record<string, string> {
    const environment: Record<string, string> = {
      STAGE: settings.stage,
      POWERTOOLS_METRICS_NAMESPACE: settings.metricNamespace,
      LOG_LEVEL: settings.logLevel,
      TOKEN_TTL_SECONDS: String(settings.tokenTtlSeconds),
      API_KEY_CACHE_TTL_SECONDS: String(settings.apiKeyCacheTtlSeconds),
      API_KEY_ENVIRONMENT: settings.apiKeyEnvironment,
      ANON_RATE_LIMIT_PER_MINUTE: String(settings.anonymousRequestsPerMinute),
      RECEIPT_RETENTION_DAYS: String(settings.receiptRetentionDays),
      ESCROW_RETENTION_DAYS: String(settings.escrowRetentionDays),
      AUDIT_RETENTION_DAYS: String(settings.auditRetentionDays),
      // The Tracer stays unloaded where the stage traces at Lambda's level only (lib/wiring/aws-observability.ts).
      ...(settings.tracing === 'lambda' ? { POWERTOOLS_TRACE_ENABLED: 'false' } : {}),
    };
    for (const key of Object.keys(route.tables) as TableKey[]) {
      environment[tableEnvVar(key)] = this.data.tables[key].tableName;
    }
    if (route.escrow) environment.ESCROW_KMS_KEY_ID = this.escrowKeyAlias.aliasName;
    if (route.logKey) environment.LOG_KMS_KEY_ID = this.logKey.keyArn;
    if (route.cardTags) environment.CARD_TAG_SECRET_NAME = this.cardTagSecret.secret.secretName;
    if (route.cursors) environment.CURSOR_SECRET_NAME = this.cursorSecret.secret.secretName;
    if (route.gateways) {
      environment.STRIPE_SECRET_NAME = settings.stripeSecretName;
      environment.SQUARE_SECRET_NAME = settings.squareSecretName;
      environment.SQUARE_ENVIRONMENT = settings.squareEnvironment;
      // Square cannot take a payment without a location, so it is only switched on with one.
      environment.PAYMENT_GATEWAYS = settings.squareLocationId ? 'gateway_a,gateway_b' : 'gateway_a';
      if (settings.squareLocationId) environment.SQUARE_LOCATION_ID = settings.squareLocationId;
    }
    if (route.gatewayEvents) {
      environment.STRIPE_WEBHOOK_SECRET_NAME = settings.stripeWebhookSecretName;
      environment.SQUARE_WEBHOOK_SECRET_NAME = settings.squareWebhookSecretName;
      if (settings.squareWebhookUrl) environment.SQUARE_WEBHOOK_URL = settings.squareWebhookUrl;
    }
    return environment;
  }

  /** A secret's ARN by name: Secrets Manager appends six random characters, which `??????` matches. */
  private secretArn(name: string): string {
    return this.formatArn({
      service: 'secretsmanager',
      resource: 'secret',
      resourceName: `${name}-??????`,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
  }

  /**
   * The gateways' events: the function that verifies them (gatewayEvents in its route) alone may read
   * the webhook signing secrets, and without a custom URL it verifies Square's signature over the
   * stage's own events URL (read when the API exists, at synthesis).
   */
  private grantGatewayEvents(
    fn: ServiceFunction,
    route: FunctionDefinition,
    settings: ServiceSettings,
  ): void {
    fn.role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['secretsmanager:GetSecretValue'],
        resources: [settings.stripeWebhookSecretName, settings.squareWebhookSecretName].map((name) =>
          this.secretArn(name),
        ),
      }),
    );
    const path = ('path' in route ? String(route.path) : '').replace('{gateway}', 'gateway_b');
    if (!settings.squareWebhookUrl) {
      fn.function.addEnvironment(
        'SQUARE_WEBHOOK_URL',
        Lazy.string({
          produce: () =>
            `https://${this.api.api.restApiId}.execute-api.${this.region}.${this.urlSuffix}/${settings.stage}${path}`,
        }),
      );
    }
    new CfnOutput(this, 'StripeWebhookSecretName', { value: settings.stripeWebhookSecretName });
    new CfnOutput(this, 'SquareWebhookSecretName', { value: settings.squareWebhookSecretName });
    new CfnOutput(this, 'GatewayEventsUrl', {
      value: Lazy.string({
        produce: () => `${this.api.api.url}${path.replace('gateway_b', '{gateway}').slice(1)}`,
      }),
      description: 'Register with Stripe (gateway_a) and Square (gateway_b) as their webhook endpoint',
    });
  }

  private grantRoute(fn: ServiceFunction, route: FunctionDefinition, settings: ServiceSettings): void {
    const entries = Object.entries(route.tables) as [
      TableKey,
      NonNullable<RouteDefinition['tables'][TableKey]>,
    ][];
    for (const [key, access] of entries) {
      for (const statement of tableStatements(
        key,
        access,
        this.data.tables[key].tableArn,
        this.data.indexNames(key),
      )) {
        fn.role.addToPrincipalPolicy(statement);
      }
    }
    const keyed = entries.filter(([key]) => this.data.isCustomerKeyed(key));
    if (keyed.length > 0) {
      fn.role.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: keyed.some(([, access]) => canWrite(access))
            ? [...tableKeyWriteActions]
            : [...tableKeyReadActions],
          resources: [this.data.encryptionKey.keyArn],
          conditions: dynamoViaService(),
        }),
      );
    }
    if (route.cardTags) this.cardTagSecret.grantRead(fn.role);
    if (route.cursors) this.cursorSecret.grantRead(fn.role);
    const kmsActions = escrowActions(route.escrow);
    if (kmsActions.length > 0) {
      fn.role.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: kmsActions,
          resources: [this.escrowKey.keyArn],
        }),
      );
    }
    if (route.logKey) {
      fn.role.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['kms:Sign', 'kms:GetPublicKey'],
          resources: [this.logKey.keyArn],
        }),
      );
    }
    if (route.gateways) {
      // Secrets Manager appends six random characters to a secret's ARN; `??????` matches exactly those.
      const secretArns = [settings.stripeSecretName, settings.squareSecretName].map((name) =>
        this.formatArn({
          service: 'secretsmanager',
          resource: 'secret',
          resourceName: `${name}-??????`,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
      );
      fn.role.addToPrincipalPolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['secretsmanager:GetSecretValue'],
          resources: secretArns,
        }),
      );
    }
    if (route.gatewayEvents) this.grantGatewayEvents(fn, route, settings);
  }

  private addOutputs(settings: ServiceSettings): void {
    // Replaces RestApi's own output, whose logical id carries a hash.
    this.api.api.node.tryRemoveChild('Endpoint');
    new CfnOutput(this, 'ApiUrl', { value: this.api.api.url, description: 'Base URL of the stage' });
    new CfnOutput(this, 'StripeSecretName', { value: settings.stripeSecretName });
    new CfnOutput(this, 'SquareSecretName', { value: settings.squareSecretName });
    for (const tier of tierNames) {
      const plan = this.api.usagePlans[tier];
      new CfnOutput(this, `UsagePlanId${pascal(tier)}`, {
        value: plan.usagePlanId,
        description: `Usage plan of the ${tier} tier (USAGE_PLAN_ID_${tier.toUpperCase()})`,
      });
      new StringParameter(this, `UsagePlanParameter${pascal(tier)}`, {
        parameterName: usagePlanParameterName(settings.stage, tier),
        stringValue: plan.usagePlanId,
        description: `API Gateway usage plan id of the ${tier} tier; read by the admin CLI`,
      });
    }
  }
}
