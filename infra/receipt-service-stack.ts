import { fileURLToPath } from 'node:url';
import { Annotations, ArnFormat, CfnOutput, RemovalPolicy, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import { Effect, Policy, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Alias, Key, KeySpec, KeyUsage } from 'aws-cdk-lib/aws-kms';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';
import { edgeAuthorizerFunction } from '../functions/platform/edge-authorizer/function.js';
import type { FunctionDefinition } from '../lib/kernel/route.js';
import { routes as serviceRoutes, type RouteDefinition } from '../functions/routes.js';
import { tableDefinitions, tableEnvVar, type TableDefinition, type TableKey } from '../lib/kernel/tables.js';
import { tierNames, usagePlanParameterName } from '../lib/kernel/tiers.js';
import { CardTagSecret } from './card-tag-secret.js';
import { CursorSecret } from './cursor-secret.js';
import { DataTables, dynamoViaService } from './data-tables.js';
import { Monitoring } from './monitoring.js';
import { applyNagSuppressions } from './nag-suppressions.js';
import {
  canWrite,
  escrowActions,
  keyAdministration,
  tableKeyReadActions,
  tableKeyWriteActions,
  tableStatements,
} from './permissions.js';
import { ServiceApi } from './service-api.js';
import { WebhookDelivery } from './webhook-delivery.js';
import { webhookDispatchFunction } from '../functions/webhooks/webhook-dispatch/function.js';
import { webhookSweepFunction } from '../functions/webhooks/webhook-sweep/function.js';
import { webhookDeliverFunction } from '../functions/webhooks/webhook-deliver/function.js';
import { DEFAULT_TIMEOUT_SECONDS, ServiceFunction } from './service-function.js';
import { resolveSettings, type ServiceSettings, type SettingsInput } from './settings.js';

export interface ReceiptServiceStackProps extends StackProps {
  /** Overrides context and defaults (see infra/settings.ts). */
  settings?: SettingsInput;
  /** Defaults to functions/routes.ts. */
  routes?: readonly RouteDefinition[];
  /** Defaults to this repository: where package.json and the route entries are. */
  projectRoot?: string;
}

export const defaultProjectRoot = fileURLToPath(new URL('..', import.meta.url));

const pascal = (name: string): string =>
  name
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((part) => `${part.charAt(0).toUpperCase()}${part.slice(1)}`)
    .join('');

/** The whole deployed service for one stage: tables, escrow key, one function per route, the API. */
export class ReceiptServiceStack extends Stack {
  readonly settings: ServiceSettings;
  readonly data: DataTables;
  readonly escrowKey: Key;
  /** The card-tag key's secret and its customer-managed key. */
  readonly cardTagSecret: CardTagSecret;
  /** The paging cursors' key, read only by the routes that declare `cursors`. */
  readonly cursorSecret: CursorSecret;
  readonly escrowKeyAlias: Alias;
  readonly functions: ReadonlyMap<string, ServiceFunction>;
  /** API Gateway's authorizer for every keyed method; not a route. */
  readonly edgeAuthorizer: ServiceFunction;
  readonly api: ServiceApi;
  readonly monitoring: Monitoring;
  /** The receipts stream's dispatcher, the sweeper's schedule and the dead-letter queue. */
  readonly webhookDelivery: WebhookDelivery;

  constructor(scope: Construct, id: string, props: ReceiptServiceStackProps = {}) {
    super(scope, id, props);
    const settings = resolveSettings(this, props.settings);
    this.settings = settings;
    const routes = props.routes ?? serviceRoutes;
    const projectRoot = props.projectRoot ?? defaultProjectRoot;

    Tags.of(this).add('service', 'receipt-service');
    Tags.of(this).add('stage', settings.stage);
    if (settings.tiersOverridden) {
      Annotations.of(this).addWarningV2(
        'receipt-service:tiers-overridden',
        'Usage plans differ from lib/kernel/tiers.ts; the service limiter and X-RateLimit-* headers still use lib/kernel/tiers.ts',
      );
    }

    this.data = new DataTables(this, 'Data', { prefix: settings.resourcePrefix, stage: settings.stage });
    this.cardTagSecret = new CardTagSecret(this, 'CardTagKey', {
      prefix: settings.resourcePrefix,
      stage: settings.stage,
    });
    this.cursorSecret = new CursorSecret(this, 'CursorKey', { prefix: settings.resourcePrefix });

    // Wraps receipt keys for recipients who are not registered yet. Retained on stack deletion:
    // escrowed receipts already stored can only ever be opened with this key. Its policy leaves the
    // account administration only: who may decrypt is named in it, role by role (nameEscrowKeyUsers),
    // so no IAM policy elsewhere in the account can open escrow.
    this.escrowKey = new Key(this, 'EscrowKey', {
      description: `receipt-service ${settings.stage}: escrow key for receipts of unregistered recipients`,
      keySpec: KeySpec.RSA_2048,
      keyUsage: KeyUsage.ENCRYPT_DECRYPT,
      removalPolicy: RemovalPolicy.RETAIN,
      policy: new PolicyDocument({ statements: [keyAdministration()] }),
    });
    // The alias goes with the stack so a redeploy of the stage can create it again. Functions name the
    // key by alias: the id is shown in envelopes (escrowKeyId), and an ARN would show the account.
    this.escrowKeyAlias = new Alias(this, 'EscrowKeyAlias', {
      aliasName: `alias/${settings.resourcePrefix}-escrow`,
      targetKey: this.escrowKey,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    const tracingPolicy = new Policy(this, 'TracingPolicy', {
      statements: [
        new PolicyStatement({
          effect: Effect.ALLOW,
          actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
          resources: ['*'],
        }),
      ],
    });

    const functions = new Map<string, ServiceFunction>();
    for (const route of routes) {
      const fn = new ServiceFunction(this, `${pascal(route.name)}Function`, {
        route,
        projectRoot,
        functionName: `${settings.resourcePrefix}-${route.name}`,
        environment: this.environmentFor(route, settings),
        logRetention: settings.logRetentionDays,
        tracingPolicy,
      });
      this.grantRoute(fn, route, settings);
      functions.set(route.name, fn);
    }
    this.functions = functions;
    this.nameEscrowKeyUsers(routes, functions);

    this.edgeAuthorizer = new ServiceFunction(this, 'EdgeAuthorizerFunction', {
      route: edgeAuthorizerFunction,
      projectRoot,
      functionName: `${settings.resourcePrefix}-${edgeAuthorizerFunction.name}`,
      environment: this.environmentFor(edgeAuthorizerFunction, settings),
      logRetention: settings.logRetentionDays,
      tracingPolicy,
      description: 'API Gateway authorizer: checks X-API-Key by its hash, names the usage-plan key',
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
      stage: settings.stage,
      resourcePrefix: settings.resourcePrefix,
      routes,
      handlers: new Map([...functions].map(([name, fn]) => [name, fn.function])),
      authorizer: this.edgeAuthorizer.function,
      tiers: settings.tiers,
      logRetention: settings.logRetentionDays,
      cloudWatchRole: settings.apiGatewayCloudWatchRole,
      publicRouteThrottle: {
        rateLimit: settings.publicRouteRateLimit,
        burstLimit: settings.publicRouteBurstLimit,
      },
    });

    this.monitoring = new Monitoring(this, 'Monitoring', {
      resourcePrefix: settings.resourcePrefix,
      stage: this.api.api.deploymentStage,
      accessLogGroup: this.api.accessLogGroup,
      functions: [
        ...routes.map((route) => ({
          name: route.name,
          fn: (functions.get(route.name) as ServiceFunction).function,
          logGroup: (functions.get(route.name) as ServiceFunction).logGroup,
          timeoutSeconds: route.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
        })),
        ...deliveryFunctions.map(({ definition, fn }) => ({
          name: definition.name,
          fn: fn.function,
          logGroup: fn.logGroup,
          timeoutSeconds: definition.timeoutSeconds,
        })),
      ],
      webhooks: {
        deadLetterQueue: this.webhookDelivery.deadLetterQueue,
        deliveryDeadLetterQueue: this.webhookDelivery.deliveryDeadLetterQueue,
      },
      tables: this.data.tables,
      alarmEmail: settings.alarmEmail,
      dashboard: settings.dashboard,
      security: {
        unauthorized: settings.unauthorizedAlarmThreshold,
        forbidden: settings.forbiddenAlarmThreshold,
        decryptionErrors: settings.decryptionErrorAlarmThreshold,
        grantErrors: settings.grantErrorAlarmThreshold,
        registerConflicts: settings.registerConflictAlarmThreshold,
        reRegistrations: settings.reRegistrationAlarmThreshold,
      },
    });

    this.addOutputs(settings);

    applyNagSuppressions({
      api: this.api.api,
      tracingPolicy,
      cardTagSecret: this.cardTagSecret.secret,
      cursorSecret: this.cursorSecret.secret,
      ephemeralTables: Object.entries(this.data.tables)
        .filter(([key]) => !(tableDefinitions[key as TableKey] as TableDefinition).durable)
        .map(([, table]) => table),
    });
  }

  /** Only what this route's code reads: its own tables, escrow key and gateway settings. */
  private environmentFor(route: FunctionDefinition, settings: ServiceSettings): Record<string, string> {
    const environment: Record<string, string> = {
      STAGE: settings.stage,
      LOG_LEVEL: settings.logLevel,
      TOKEN_TTL_SECONDS: String(settings.tokenTtlSeconds),
      API_KEY_CACHE_TTL_SECONDS: String(settings.apiKeyCacheTtlSeconds),
      API_KEY_ENVIRONMENT: settings.apiKeyEnvironment,
      ANON_RATE_LIMIT_PER_MINUTE: String(settings.anonymousRequestsPerMinute),
      RECEIPT_RETENTION_DAYS: String(settings.receiptRetentionDays),
      ESCROW_RETENTION_DAYS: String(settings.escrowRetentionDays),
      AUDIT_RETENTION_DAYS: String(settings.auditRetentionDays),
    };
    for (const key of Object.keys(route.tables) as TableKey[]) {
      environment[tableEnvVar(key)] = this.data.tables[key].tableName;
    }
    if (route.escrow) environment.ESCROW_KMS_KEY_ID = this.escrowKeyAlias.aliasName;
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
    return environment;
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
  }

  /**
   * The escrow key's policy names each role that uses the key, once the functions exist: the key
   * depends on the roles, never the other way round. Every escrow user reads the public key; only
   * routes that unwrap may decrypt, and only with the algorithm escrow wraps with (lib/crypto/escrow.ts).
   */
  private nameEscrowKeyUsers(
    routes: readonly RouteDefinition[],
    functions: ReadonlyMap<string, ServiceFunction>,
  ): void {
    const rolesOf = (uses: readonly NonNullable<RouteDefinition['escrow']>[]) =>
      routes
        .filter((route) => route.escrow && uses.includes(route.escrow))
        .map((route) => (functions.get(route.name) as ServiceFunction).role);
    const readers = rolesOf(['wrap', 'wrapAndUnwrap']);
    if (readers.length > 0) {
      this.escrowKey.addToResourcePolicy(
        new PolicyStatement({
          sid: 'EscrowUsersReadThePublicKey',
          effect: Effect.ALLOW,
          principals: readers,
          actions: ['kms:GetPublicKey', 'kms:DescribeKey'],
          resources: ['*'],
        }),
      );
    }
    const unwrappers = rolesOf(['wrapAndUnwrap']);
    if (unwrappers.length > 0) {
      this.escrowKey.addToResourcePolicy(
        new PolicyStatement({
          sid: 'OnlyTheseRolesUnwrapEscrow',
          effect: Effect.ALLOW,
          principals: unwrappers,
          actions: ['kms:Decrypt'],
          resources: ['*'],
          conditions: { StringEquals: { 'kms:EncryptionAlgorithm': 'RSAES_OAEP_SHA_256' } },
        }),
      );
    }
  }

  private addOutputs(settings: ServiceSettings): void {
    // Replaces RestApi's own output, whose logical id carries a hash.
    this.api.api.node.tryRemoveChild('Endpoint');
    new CfnOutput(this, 'ApiUrl', { value: this.api.api.url, description: 'Base URL of the stage' });
    new CfnOutput(this, 'EscrowKeyArn', { value: this.escrowKey.keyArn });
    new CfnOutput(this, 'TablePrefix', {
      value: `${settings.resourcePrefix}-`,
      description: 'TABLE_PREFIX for the admin CLI',
    });
    new CfnOutput(this, 'ApiKeysTable', {
      value: this.data.tables.apiKeys.tableName,
      description: 'TABLE_API_KEYS for `npm run admin -- api-keys ... --aws`',
    });
    new CfnOutput(this, 'StripeSecretName', { value: settings.stripeSecretName });
    new CfnOutput(this, 'SquareSecretName', { value: settings.squareSecretName });
    new StringParameter(this, 'TablePrefixParameter', {
      parameterName: `/${settings.stage}/receipt-service/table-prefix`,
      stringValue: `${settings.resourcePrefix}-`,
      description: 'TABLE_PREFIX for the admin CLI',
    });
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
    if (this.monitoring.topic)
      new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn });
  }
}
