/**
 * The deployed view of the OpenAPI document: the public document (lib/openapi/document.ts) with the
 * members API Gateway reads added (`x-amazon-apigateway-*`), from which `SpecRestApi` builds the REST
 * API (infra/service-api.ts). lib/openapi/views.ts strips them again; test/infra/api.test.ts checks
 * that stripping gives back the public document.
 *
 * What the definition declares, as the RestApi of methods and resources declared before it:
 * - each route's operation: its Lambda proxy integration, the edge authorizer, an API key when keyed
 *   (the usage plans count the key the authorizer names), the path-parameter validator when it has
 *   path parameters;
 * - a 405 mock on every routed path and a 404 mock on every other path (a root `{proxy+}` and each
 *   path between the root and a route), behind the authorizer so their answers carry its context;
 * - the gateway responses of infra/gateway-responses.ts.
 */
import type { RouteDefinition } from '../lib/kernel/route.js';
import {
  API_GATEWAY_SECURITY_MARKER,
  shareResponses,
  withoutProse,
  type OpenApiDocument,
} from '../lib/openapi/views.js';
import {
  edgeErrorResponses,
  gatewayResponseHeaders,
  envelopeTemplate,
  methodNotAllowedAnswer,
  notFoundAnswer,
  type EdgeAnswer,
} from './gateway-responses.js';

/**
 * API Gateway imports OpenAPI 2.0 and 3.0 definitions, not 3.1: the deployed view declares 3.0.1.
 * Its schemas stay as the public document has them; with no body validation (below), API Gateway only
 * keeps them as models.
 */
export const DEPLOYED_OPENAPI_VERSION = '3.0.1';

/** The one request validator: path parameters only (see pathParameterValidator). */
export const PATH_PARAMETER_VALIDATOR = 'path-parameters';

/**
 * Checks required path parameters at the edge. Bodies are validated by the functions, which report
 * every bad field in the service's own envelope: the definition now carries each body's schema, which
 * API Gateway would otherwise enforce itself with its own 400.
 */
export const pathParameterValidator = { validateRequestParameters: true, validateRequestBody: false };

export interface DeployedWiring {
  /** The security scheme naming the edge authorizer; API Gateway names the authorizer after it. */
  authorizerName: string;
  /** The authorizer function's invocation URI (`arn:…:apigateway:…:lambda:path/…/invocations`). */
  authorizerUri: string;
  /** The invocation URI of the function serving a route. */
  integrationUri: (route: RouteDefinition) => string;
  /** The REST API's description; the public document's reader's introduction is left out. */
  description: string;
  authorizerResultTtlInSeconds: number;
}

type Json = Record<string, unknown>;

export const pathParameters = (path: string): string[] =>
  [...path.matchAll(/\{(\w+)\+?\}/g)].map((match) => match[1] as string);

/** A mock ANY method giving `answer`, behind the authorizer and without an API key. */
function mockAnswer(answer: EdgeAnswer, authorizerName: string, path: string): Json {
  const { statusCode, template, headers } = answer;
  const parameters = pathParameters(path);
  return {
    ...(parameters.length > 0
      ? {
          parameters: parameters.map((name) => ({
            name,
            in: 'path',
            required: true,
            schema: { type: 'string' },
          })),
        }
      : {}),
    security: [{ [authorizerName]: [] }],
    responses: {
      [statusCode]: {
        description: 'Answered by API Gateway',
        headers: Object.fromEntries(
          Object.keys(headers).map((name) => [name, { schema: { type: 'string' } }]),
        ),
      },
    },
    'x-amazon-apigateway-integration': {
      type: 'mock',
      // The default integration response below turns whatever the mock returns into the answer, so
      // bodies of any content type pass through untouched.
      passthroughBehavior: 'when_no_match',
      requestTemplates: { 'application/json': `{"statusCode": ${statusCode}}` },
      responses: {
        default: {
          statusCode,
          responseParameters: Object.fromEntries(
            Object.entries(headers).map(([name, value]) => [`method.response.header.${name}`, value]),
          ),
          responseTemplates: { 'application/json': template },
        },
      },
    },
  };
}

/** The paths between the root and a route that are not routes themselves (/api, /api/v1…). */
export function pathsBetween(routedPaths: readonly string[]): string[] {
  const routed = new Set(routedPaths);
  const between = new Set(
    routedPaths.flatMap((path) => {
      const segments = path.split('/').filter(Boolean);
      return segments.slice(1).map((_, index) => `/${segments.slice(0, index + 1).join('/')}`);
    }),
  );
  return [...between].filter((path) => !routed.has(path)).sort();
}

/** The catch-all path that answers 404 for anything no route declares. */
export const NOT_FOUND_PATH = '/{proxy+}';

function gatewayResponses(): Json {
  return Object.fromEntries(
    edgeErrorResponses.map((response) => [
      response.type,
      {
        ...(response.statusCode ? { statusCode: response.statusCode } : {}),
        responseParameters: Object.fromEntries(
          Object.entries(gatewayResponseHeaders(response)).map(([name, value]) => [
            `gatewayresponse.header.${name}`,
            value,
          ]),
        ),
        responseTemplates: {
          'application/json': envelopeTemplate(response.code, response.message, response.messageTemplate),
        },
      },
    ]),
  );
}

/**
 * The deployed view: a copy of the public document with API Gateway's members added. Nothing of the
 * public document is changed but the OpenAPI version and the introduction (`info.description`), and
 * the reader's prose is left out (lib/openapi/views.ts, `readersProse`): all named in
 * test/infra/api.test.ts.
 */
export function deployedDefinition(
  publicDocument: OpenApiDocument,
  routes: readonly RouteDefinition[],
  wiring: DeployedWiring,
): Json {
  const document = withoutProse(structuredClone(publicDocument)) as unknown as Json & {
    info: Json;
    paths: Record<string, Record<string, Json>>;
    components: Json & { securitySchemes: Record<string, Json> };
  };
  const edge = { [wiring.authorizerName]: [] };
  document.openapi = DEPLOYED_OPENAPI_VERSION;
  document.info.description = wiring.description;
  document['x-amazon-apigateway-api-key-source'] = 'AUTHORIZER';
  document['x-amazon-apigateway-request-validators'] = { [PATH_PARAMETER_VALIDATOR]: pathParameterValidator };
  document['x-amazon-apigateway-gateway-responses'] = gatewayResponses();
  document.components.securitySchemes[wiring.authorizerName] = {
    // A REQUEST authorizer is declared as an apiKey scheme whose name API Gateway does not read.
    type: 'apiKey',
    name: 'Unused',
    in: 'header',
    [API_GATEWAY_SECURITY_MARKER]: 'custom',
    'x-amazon-apigateway-authorizer': {
      type: 'request',
      authorizerUri: wiring.authorizerUri,
      // No identity source and no result cache: the authorizer runs for every request, a missing
      // X-API-Key included, and its context (the request's ISO time, the binding rate limit) is that
      // request's own, for the responses API Gateway makes itself (infra/gateway-responses.ts).
      authorizerResultTtlInSeconds: wiring.authorizerResultTtlInSeconds,
    },
  };

  for (const route of routes) {
    const operation = document.paths[route.path]?.[route.method.toLowerCase()];
    if (!operation) throw new Error(`The OpenAPI document has no ${route.method} ${route.path}`);
    // Keyed operations require the API key so the usage plans throttle each client at the edge; the
    // key they count is the one the authorizer names. Public ones have the authorizer too: it lets
    // anyone through and gives their gateway responses the time and the IP's budget.
    operation.security = route.apiKeyRequired ? [{ ApiKeyAuth: [] }, edge] : [edge];
    if (pathParameters(route.path).length > 0)
      operation['x-amazon-apigateway-request-validator'] = PATH_PARAMETER_VALIDATOR;
    operation['x-amazon-apigateway-integration'] = {
      type: 'aws_proxy',
      httpMethod: 'POST',
      uri: wiring.integrationUri(route),
      passthroughBehavior: 'when_no_match',
    };
  }

  // A known path with a method it lacks would otherwise get 403 "Missing Authentication Token": an
  // ANY method answers 405 instead (specific methods win over ANY). It needs no API key: it reveals
  // only what openapi.json already publishes.
  const routedPaths = [...new Set(routes.map((route) => route.path))];
  for (const path of routedPaths) {
    const methods = routes.filter((route) => route.path === path).map((route) => route.method);
    (document.paths[path] as Json)['x-amazon-apigateway-any-method'] = mockAnswer(
      methodNotAllowedAnswer(methods),
      wiring.authorizerName,
      path,
    );
  }
  // A path no route declares: the greedy catch-all answers 404 from a mock behind the authorizer, so
  // the answer has the request's time and rate limit like every other (API Gateway's own
  // MISSING_AUTHENTICATION_TOKEN comes before any authorizer). Routed paths are more specific and win.
  // A path on the way to a route has no method of its own: the same 404.
  for (const path of [NOT_FOUND_PATH, ...pathsBetween(routedPaths)]) {
    if (document.paths[path]) throw new Error(`${path} is a route: it cannot answer 404`);
    document.paths[path] = {
      'x-amazon-apigateway-any-method': mockAnswer(notFoundAnswer, wiring.authorizerName, path),
    };
  }
  // Responses alike (most errors, once their prose is gone) are declared once and referenced; the
  // mocks' stay inline (lib/openapi/views.ts, shareResponses).
  return shareResponses(document);
}
