import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AccessLogFormat,
  ApiKeySourceType,
  EndpointType,
  IdentitySource,
  LambdaIntegration,
  LogGroupLogDestination,
  MethodLoggingLevel,
  MockIntegration,
  PassthroughBehavior,
  Period,
  RequestAuthorizer,
  RestApi,
  type MethodDeploymentOptions,
  type RequestValidator,
  type UsagePlan,
} from 'aws-cdk-lib/aws-apigateway';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { EDGE_API_KEY_HEADER, EDGE_AUTHORIZER_CACHE_SECONDS } from '../lib/api-keys/edge-authorizer.js';
import type { RouteDefinition } from '../lib/kernel/route.js';
import { tierNames, type TierName, type TierTable } from '../lib/kernel/tiers.js';
import { edgeErrorResponses, envelopeTemplate, REQUEST_ID_HEADER } from './gateway-responses.js';

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
      // API Gateway answers 401 itself, without invoking the function, when the header is missing.
      identitySources: [IdentitySource.header(EDGE_API_KEY_HEADER)],
      // One answer per key value for five minutes: most requests cost no invocation. A revoked key
      // still stops at once: revoking deletes its usage-plan key, and the function checks it too.
      resultsCacheTtl: Duration.seconds(EDGE_AUTHORIZER_CACHE_SECONDS),
    });

    this.addRoutes(props, validator);
    this.addMethodNotAllowed(props.routes);
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
          // the key they count is the one the authorizer names.
          apiKeyRequired: route.apiKeyRequired,
          ...(route.apiKeyRequired ? { authorizer: this.authorizer } : {}),
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
      const allow = methods.join(', ');
      const body =
        `{"success":false,"error":{"code":"method_not_allowed","message":"This method is not allowed on this resource",` +
        `"details":{"allowed":${JSON.stringify(methods)}},"timestamp":"$context.requestTime","request_id":"$context.requestId"}}`;
      this.api.root.resourceForPath(path).addMethod(
        'ANY',
        new MockIntegration({
          // The default (unconditional) integration response below turns whatever the mock
          // returns into the 405, so bodies of any content type pass through untouched.
          passthroughBehavior: PassthroughBehavior.WHEN_NO_MATCH,
          requestTemplates: { 'application/json': '{"statusCode": 405}' },
          integrationResponses: [
            {
              statusCode: '405',
              responseTemplates: { 'application/json': body },
              responseParameters: {
                'method.response.header.Allow': `'${allow}'`,
                [`method.response.header.${REQUEST_ID_HEADER}`]: 'context.requestId',
              },
            },
          ],
        }),
        {
          apiKeyRequired: false,
          methodResponses: [
            {
              statusCode: '405',
              responseParameters: {
                'method.response.header.Allow': true,
                [`method.response.header.${REQUEST_ID_HEADER}`]: true,
              },
            },
          ],
        },
      );
    }
  }

  private addGatewayResponses(): void {
    for (const response of edgeErrorResponses) {
      this.api.addGatewayResponse(`Response${response.type.responseType}`, {
        type: response.type,
        statusCode: response.statusCode,
        responseHeaders: { [REQUEST_ID_HEADER]: 'context.requestId', ...response.headers },
        templates: {
          'application/json': envelopeTemplate(response.code, response.message, response.messageTemplate),
        },
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
