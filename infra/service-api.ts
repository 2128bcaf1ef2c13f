import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  ApiKeySourceType,
  CfnAuthorizer,
  EndpointType,
  ResponseType,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  MockIntegration,
  PassthroughBehavior,
  Period,
  RequestAuthorizer,
  RestApi,
  type IResource,
  type MethodDeploymentOptions,
  type RequestValidator,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { EDGE_AUTHORIZER_CACHE_SECONDS } from '../lib/api-keys/edge-authorizer.js';
import type { RouteDefinition } from '../lib/kernel/route.js';
import { tierNames, type TierName, type TierTable } from '../lib/kernel/tiers.js';
import {
  edgeErrorResponses,
  gatewayAnswer,
  methodNotAllowedAnswer,
  notFoundAnswer,
  type EdgeAnswer,
} from './gateway-responses.js';

export interface ServiceApiProps {
  stage: string;
  resourcePrefix: string;
  routes: readonly RouteDefinition[];
  /** Route name → the function serving it. */
  handlers: ReadonlyMap<string, IFunction>;
  /**
   * The edge authorizer (functions/platform/edge-authorizer): checks X-API-Key by its hash and names the
   * client's usage-plan key, so API Gateway never holds a client's secret.
   */
  authorizer: IFunction;
  tiers: TierTable;
  logRetention: RetentionDays;
  /** Create the account-wide role API Gateway logs through (needed once per account and region). */
  cloudWatchRole: boolean;
  publicRouteThrottle: { rateLimit: number; burstLimit: number };
}

const pathParameters = (path: string): string[] =>
  [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);

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

/**
 * The REST API built from the route table. Request bodies: API Gateway's own ceiling is 10 MB and
 * it cannot be lowered, so the 128 KiB limit is enforced by the functions (413 payload_too_large).
 */
export class ServiceApi extends Construct {
  readonly api: RestApi;
  readonly accessLogGroup: LogGroup;
  readonly usagePlans: Record<TierName, UsagePlan>;
  readonly authorizer: RequestAuthorizer;
  private routePaths: string[] = [];

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

    this.api = new RestApi(this, 'Api', {
      restApiName: props.resourcePrefix,
      description: `Encrypted digital receipts (${props.stage})`,
      endpointTypes: [EndpointType.REGIONAL],
      // Usage-plan keys come from the edge authorizer's usageIdentifierKey, not from the header: the
      // API Gateway keys hold usage identifiers, never the clients' secrets (lib/api-keys/edge-authorizer.ts).
      apiKeySourceType: ApiKeySourceType.AUTHORIZER,
      cloudWatchRole: props.cloudWatchRole,
      // The role is account-wide: other APIs may log through it after this stack is gone.
      cloudWatchRoleRemovalPolicy: props.cloudWatchRole ? RemovalPolicy.RETAIN : undefined,
      deployOptions: {
        stageName: props.stage,
        tracingEnabled: true,
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

    // Checks required path parameters at the edge; bodies are validated by the functions, which
    // report every bad field in the service's own envelope. No method has a body model, so the
    // body flag has nothing to act on.
    const validator = this.api.addRequestValidator('RequestValidator', {
      validateRequestParameters: true,
      validateRequestBody: true,
    });

    this.authorizer = new RequestAuthorizer(this, 'EdgeAuthorizer', {
      authorizerName: `${props.resourcePrefix}-edge`,
      handler: props.authorizer,
      // No identity source and no result cache: the authorizer runs for every request, a missing
      // X-API-Key included, and its context (the request's ISO time, the binding rate limit) is that
      // request's own, for the responses API Gateway makes itself (infra/gateway-responses.ts).
      identitySources: [],
      resultsCacheTtl: Duration.seconds(EDGE_AUTHORIZER_CACHE_SECONDS),
    });
    // CDK writes an empty IdentitySource; without a cache, the property is left out.
    (this.authorizer.node.defaultChild as CfnAuthorizer).addPropertyDeletionOverride('IdentitySource');

    this.routePaths = [...new Set(props.routes.map((route) => route.path))];
    this.addRoutes(props, validator);
    this.addMethodNotAllowed(props.routes);
    this.addNotFound();
    this.addGatewayResponses();
    this.usagePlans = this.addUsagePlans(props);
  }

  private addRoutes(props: ServiceApiProps, validator: RequestValidator): void {
    for (const route of props.routes) {
      const handler = props.handlers.get(route.name);
      if (!handler) throw new Error(`No function for route ${route.name}`);
      const parameters = pathParameters(route.path);
      this.api.root.resourceForPath(route.path).addMethod(
        route.method,
        // allowTestInvoke: false keeps the Lambda permission to this stage's calls only.
        new LambdaIntegration(handler, { allowTestInvoke: false }),
        {
          operationName: route.name,
          // Keyed methods keep apiKeyRequired so the usage plans throttle each client at the edge;
          // the key they count is the one the authorizer names. Public ones have the authorizer too:
          // it lets anyone through and gives their gateway responses the time and the IP's budget.
          apiKeyRequired: route.apiKeyRequired,
          authorizer: this.authorizer,
          requestParameters: Object.fromEntries(
            parameters.map((name) => [`method.request.path.${name}`, true]),
          ),
          requestValidator: parameters.length > 0 ? validator : undefined,
        },
      );
    }
  }

  /**
   * A known path with a method it lacks would otherwise get 403 "Missing Authentication Token".
   * An ANY method on each routed resource answers 405 instead; specific methods win over ANY.
   * It needs no API key: it reveals only what openapi.json already publishes.
   */
  private addMethodNotAllowed(routes: readonly RouteDefinition[]): void {
    const allowedByPath = new Map<string, string[]>();
    for (const route of routes)
      allowedByPath.set(route.path, [...(allowedByPath.get(route.path) ?? []), route.method]);

    for (const [path, methods] of allowedByPath) {
      this.addMockAnswer(this.api.root.resourceForPath(path), methodNotAllowedAnswer(methods));
    }
  }

  /**
   * A path no route declares: a greedy catch-all at the root answers 404 from a mock behind the
   * authorizer, so the answer has the request's time and rate limit like every other (API Gateway's
   * own MISSING_AUTHENTICATION_TOKEN comes before any authorizer). Routed paths are more specific
   * and win over it.
   */
  private addNotFound(): void {
    this.addMockAnswer(this.api.root.addResource('{proxy+}'), notFoundAnswer);
    // A resource on the way to a route (/api, /api/v1...) has no method of its own: the same 404.
    const routed = new Set(this.routePaths);
    const between = new Set(
      this.routePaths.flatMap((path) => {
        const segments = path.split('/').filter(Boolean);
        return segments.slice(1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
      }),
    );
    for (const path of [...between].filter((path) => !routed.has(path)).sort())
      this.addMockAnswer(this.api.root.resourceForPath(path), notFoundAnswer);
  }

  /** An ANY method giving `answer` from a mock integration, behind the authorizer. */
  private addMockAnswer(resource: IResource, answer: EdgeAnswer): void {
    const { statusCode: status, template: body, headers } = answer;
    resource.addMethod(
      'ANY',
      new MockIntegration({
        // The default (unconditional) integration response below turns whatever the mock
        // returns into the answer, so bodies of any content type pass through untouched.
        passthroughBehavior: PassthroughBehavior.WHEN_NO_MATCH,
        requestTemplates: { 'application/json': `{"statusCode": ${status}}` },
        integrationResponses: [
          {
            statusCode: status,
            responseTemplates: { 'application/json': body },
            responseParameters: Object.fromEntries(
              Object.entries(headers).map(([name, value]) => [`method.response.header.${name}`, value]),
            ),
          },
        ],
      }),
      {
        // It reveals only what openapi.json already publishes; the authorizer lets anyone through.
        apiKeyRequired: false,
        authorizer: this.authorizer,
        methodResponses: [
          {
            statusCode: status,
            responseParameters: Object.fromEntries(
              Object.keys(headers).map((name) => [`method.response.header.${name}`, true]),
            ),
          },
        ],
      },
    );
  }

  private addGatewayResponses(): void {
    for (const response of edgeErrorResponses) {
      const answer = gatewayAnswer(response);
      this.api.addGatewayResponse(`Response${response.type}`, {
        type: ResponseType.of(response.type),
        statusCode: response.statusCode,
        responseHeaders: answer.headers,
        templates: { 'application/json': answer.template },
      });
    }
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
