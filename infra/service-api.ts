import { Fn, RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  ApiDefinition,
  EndpointType,
  LogGroupLogDestination,
  MethodLoggingLevel,
  Period,
  SpecRestApi,
  type MethodDeploymentOptions,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway';
import { ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { EDGE_AUTHORIZER_CACHE_SECONDS } from '../lib/api-keys/edge-authorizer.js';
import type { RouteDeclaration, RouteDefinition } from '../lib/kernel/route.js';
import { tierNames, type TierName, type TierTable } from '../lib/kernel/tiers.js';
import { buildOpenApiDocument } from '../lib/openapi/document.js';
import { deployedDefinition } from './api-definition.js';

/**
 * A function the API invokes, with its physical name: the definition names it by an ARN built from
 * the name, not by a reference, since a function may itself read the API's URL (the gateways' events).
 */
export interface ApiFunction {
  fn: IFunction;
  name: string;
}

export interface ServiceApiProps {
  stage: string;
  resourcePrefix: string;
  /** Declarations, not just definitions: the API is defined by their OpenAPI document. */
  routes: readonly RouteDeclaration[];
  /** Route name → the function serving it. */
  handlers: ReadonlyMap<string, ApiFunction>;
  /**
   * The edge authorizer (functions/platform/edge-authorizer): checks X-API-Key by its hash and names the
   * client's usage-plan key, so API Gateway never holds a client's secret.
   */
  authorizer: ApiFunction;
  tiers: TierTable;
  logRetention: RetentionDays;
  /** Create the account-wide role API Gateway logs through (needed once per account and region). */
  cloudWatchRole: boolean;
  publicRouteThrottle: { rateLimit: number; burstLimit: number };
  /** X-Ray on the stage (settings `tracing` other than `off`). */
  tracing: boolean;
}

/** Access log fields: one JSON object per request, no key values and no bodies. */
const accessLogFormat = JSON.stringify({
  requestId: '$context.requestId',
  requestTime: '$context.requestTimeEpoch',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  resourcePath: '$context.resourcePath',
  // Not `$context.path`: DELETE /keys/tokens/{tokenId} carries a token id there; the resource path
  // names the route without its values.
  status: '$context.status',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integration.latency',
  // The key's id, never its value; the client the edge authorizer found for it.
  apiKeyId: '$context.identity.apiKeyId',
  clientId: '$context.authorizer.principalId',
  // Time the edge authorizer added: its Lambda's on a cache miss, near zero on a cache hit.
  authorizerLatencyMs: '$context.authorizer.latency',
  authorizerIntegrationLatencyMs: '$context.authorizer.integrationLatency',
  errorType: '$context.error.responseType',
  xrayTraceId: '$context.xrayTraceId',
});

/** API Gateway's resource path with its parameters as the wildcards of an execute-api ARN. */
const arnPath = (path: string): string => path.replace(/\{[^}]+\}/g, '*');

/**
 * The REST API, defined by the service's OpenAPI document with API Gateway's members added
 * (infra/api-definition.ts): its methods, authorizer, validator and gateway responses are the
 * definition's, not CloudFormation resources of their own. Request bodies: API Gateway's own ceiling
 * is 10 MB and it cannot be lowered, so the 128 KiB limit is enforced by the functions (413
 * payload_too_large).
 */
export class ServiceApi extends Construct {
  readonly api: SpecRestApi;
  readonly accessLogGroup: LogGroup;
  readonly usagePlans: Record<TierName, UsagePlan>;
  /** The authorizer's name: the definition's security scheme for it. */
  readonly authorizerName: string;

  constructor(scope: Construct, id: string, props: ServiceApiProps) {
    super(scope, id);

    this.accessLogGroup = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    // Public routes have no API key, hence no usage plan; a stage throttle is their only edge cap
    // (a route with a keyless budget of its own, the gateways' events, is throttled at that budget).
    const publicRouteOptions: Record<string, MethodDeploymentOptions> = Object.fromEntries(
      props.routes
        .filter((route) => !route.apiKeyRequired)
        .map((route) => [
          `${route.path}/${route.method}`,
          {
            throttlingRateLimit:
              route.keylessBudget?.edge.ratePerSecond ?? props.publicRouteThrottle.rateLimit,
            throttlingBurstLimit: route.keylessBudget?.edge.burst ?? props.publicRouteThrottle.burstLimit,
            // A method override does not inherit the stage's logging settings.
            loggingLevel: MethodLoggingLevel.ERROR,
            dataTraceEnabled: false,
            metricsEnabled: false,
          },
        ]),
    );

    // One Fn::Sub rather than the Fn::Join a formatted ARN gives: a third of the bytes, once per route.
    const invocationUri = ({ name }: ApiFunction): string =>
      Fn.sub(
        'arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2015-03-31/functions/' +
          `arn:\${AWS::Partition}:lambda:\${AWS::Region}:\${AWS::AccountId}:function:${name}/invocations`,
      );
    const handlerOf = (route: RouteDefinition): ApiFunction => {
      const handler = props.handlers.get(route.name);
      if (!handler) throw new Error(`No function for route ${route.name}`);
      return handler;
    };
    this.authorizerName = `${props.resourcePrefix}-edge`;
    const definition = deployedDefinition(buildOpenApiDocument(props.routes), props.routes, {
      authorizerName: this.authorizerName,
      authorizerUri: invocationUri(props.authorizer),
      integrationUri: (route) => invocationUri(handlerOf(route)),
      description: `Encrypted digital receipts (${props.stage})`,
      authorizerResultTtlInSeconds: EDGE_AUTHORIZER_CACHE_SECONDS,
    });

    this.api = new SpecRestApi(this, 'Api', {
      restApiName: props.resourcePrefix,
      apiDefinition: ApiDefinition.fromInline(definition),
      // The document's servers (the local stack, a deployed stage) name no base path to prefix: the
      // routes' paths are the API's own.
      parameters: { basepath: 'ignore' },
      // API Gateway keeps the schemas as models and warns of what JSON Schema draft 4 cannot say
      // (the document is OpenAPI 3.1's JSON Schema); nothing it enforces depends on them (docs/DEPLOY.md).
      failOnWarnings: false,
      endpointTypes: [EndpointType.REGIONAL],
      cloudWatchRole: props.cloudWatchRole,
      // The role is account-wide: other APIs may log through it after this stack is gone.
      cloudWatchRoleRemovalPolicy: props.cloudWatchRole ? RemovalPolicy.RETAIN : undefined,
      deployOptions: {
        stageName: props.stage,
        tracingEnabled: props.tracing,
        // Execution logs for errors only, and never request or response bodies: those carry
        // private keys (decrypt) and plaintext receipts.
        loggingLevel: MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        metricsEnabled: false,
        accessLogDestination: new LogGroupLogDestination(this.accessLogGroup),
        accessLogFormat: AccessLogFormat.custom(accessLogFormat),
        methodOptions: publicRouteOptions,
      },
    });

    this.allowInvocations(props, handlerOf);
    // The stage goes live once every function it invokes exists (the definition names them by name).
    for (const { fn } of [...props.handlers.values(), props.authorizer])
      this.api.latestDeployment?.node.addDependency(fn);
    this.usagePlans = this.addUsagePlans(props);
  }

  /**
   * One permission per function (a function serves one route), for this stage's calls of that route
   * only; the authorizer's for this API's authorizers.
   */
  private allowInvocations(props: ServiceApiProps, handlerOf: (route: RouteDefinition) => ApiFunction): void {
    const principal = new ServicePrincipal('apigateway.amazonaws.com');
    for (const route of props.routes) {
      handlerOf(route).fn.addPermission('ApiInvoke', {
        principal,
        // Fn::Sub rather than arnForExecuteApi's Fn::Join: a third of the bytes, once per route.
        sourceArn: Fn.sub(
          `arn:\${AWS::Partition}:execute-api:\${AWS::Region}:\${AWS::AccountId}:\${Api}/${props.stage}/${route.method}${arnPath(route.path)}`,
          { Api: this.api.restApiId },
        ),
      });
    }
    props.authorizer.fn.addPermission('ApiAuthorizerInvoke', {
      principal,
      sourceArn: Stack.of(this).formatArn({
        service: 'execute-api',
        resource: this.api.restApiId,
        resourceName: 'authorizers/*',
      }),
    });
  }

  /**
   * One usage plan per tier, from the same tier table the service's own limiter reads. API
   * Gateway's throttling and quotas are best-effort, which is why the service also counts per key.
   */
  private addUsagePlans(props: ServiceApiProps): Record<TierName, UsagePlan> {
    const plans = tierNames.map((tier) => {
      const limits = props.tiers[tier];
      const plan = this.api.addUsagePlan(`UsagePlan-${tier}`, {
        name: `${props.resourcePrefix}-${tier}`,
        description: `${tier} tier: ${limits.ratePerSecond}/s, burst ${limits.burst}, ${limits.dailyQuota}/day`,
        throttle: { rateLimit: limits.ratePerSecond, burstLimit: limits.burst },
        quota: { limit: limits.dailyQuota, period: Period.DAY },
      });
      // addUsagePlan attaches no stage by itself; without this every key would be refused.
      plan.addApiStage({ stage: this.api.deploymentStage });
      return [tier, plan] as const;
    });
    return Object.fromEntries(plans) as Record<TierName, UsagePlan>;
  }
}
