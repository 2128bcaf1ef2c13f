import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import type {
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayRequestAuthorizerEvent,
} from 'aws-lambda';
import * as z from 'zod';
import type { AppDeps } from '../lib/app/deps.js';
import { InvalidRequestError } from '../lib/kernel/errors.js';
import {
  authorizeEdge,
  formatKeyedRoutes,
  parseKeyedRoutes,
  type EdgeAuthorizerDeps,
} from '../lib/api-keys/edge-authorizer.js';
import { rateGroupOf } from '../lib/kernel/route.js';
import {
  edgeResponse,
  gatewayAnswer,
  methodNotAllowedAnswer,
  notFoundAnswer,
  renderEdgeAnswer,
  type EdgeAnswer,
} from '../infra/gateway-responses.js';
import { errorResponse } from '../lib/http/error-envelope.js';
import { httpEndpoint, type HttpHandler, type ServiceContext } from '../lib/http/pipeline.js';
import { routes, type RouteDeclaration } from '../functions/routes.js';
import { serveConsole } from './console/console.js';
import type { InvocationScope } from './invocation-scope.js';

/**
 * A stand-in for API Gateway's REST proxy integration: it turns HTTP requests into the events API
 * Gateway sends, runs the same handler modules the Lambdas run, and writes their results back.
 */
interface HandlerModule {
  createHandler(deps: AppDeps): HttpHandler;
}

interface ServedRoute {
  route: RouteDeclaration;
  /** The route's function, imported once: at start, or on its first request (lazyHandlers). */
  handler(): Promise<HttpHandler>;
  pattern: RegExp;
  paramNames: string[];
}

/** API Gateway's own payload limit; the functions enforce the service's smaller one. */
const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;
const projectRoot = fileURLToPath(new URL('..', import.meta.url));

const compilePath = (path: string): { pattern: RegExp; paramNames: string[] } => {
  const paramNames: string[] = [];
  const source = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    paramNames.push(name);
    return '([^/]+)';
  });
  return { pattern: new RegExp(`^${source}$`), paramNames };
};

async function importHandler(deps: AppDeps, route: RouteDeclaration): Promise<HttpHandler> {
  const module = (await import(pathToFileURL(resolve(projectRoot, route.entry)).href)) as HandlerModule;
  return module.createHandler(deps);
}

/** Every route's function, imported now. */
export async function loadRoutes(
  deps: AppDeps,
  declared: readonly RouteDeclaration[] = routes,
): Promise<{ route: RouteDeclaration; handler: HttpHandler }[]> {
  return Promise.all(declared.map(async (route) => ({ route, handler: await importHandler(deps, route) })));
}

function servedRoutes(deps: AppDeps, declared: readonly RouteDeclaration[]): ServedRoute[] {
  return declared.map((route) => {
    let imported: Promise<HttpHandler> | undefined;
    return { route, handler: () => (imported ??= importHandler(deps, route)), ...compilePath(route.path) };
  });
}

/** Unknown paths and methods still go through the pipeline, so they get the same headers and budget. */
const fallbackRoute: RouteDeclaration = {
  name: 'fallback',
  method: 'GET',
  path: '/{proxy+}',
  entry: 'local/server.ts',
  apiKeyRequired: false,
  roles: [],
  tables: {},
  docs: {
    tag: 'health',
    summary: 'No such route',
    description: 'Answers 404 or 405 for what no route declares.',
  },
  request: {},
  response: { description: 'Never succeeds.', schema: z.never(), enveloped: true },
  errors: {},
};

/**
 * What API Gateway answers without a function, from the declarations the CDK stack deploys
 * (infra/gateway-responses.ts): the 404 and 405 mocks behind the edge authorizer, whose context the
 * same authorizer code gives here, and the 413 it makes before any authorizer runs.
 */
function edgeAnswers(deps: AppDeps, declared: readonly RouteDeclaration[]) {
  const authorizer: EdgeAuthorizerDeps = {
    authenticator: deps.authenticator,
    logger: deps.logger,
    rates: {
      limiter: deps.rateLimiter,
      tiers: deps.tiers,
      anonymousRequestsPerMinute: deps.config.anonymousRequestsPerMinute,
      keyedRoutes: parseKeyedRoutes(
        formatKeyedRoutes(
          declared
            .filter((route) => route.apiKeyRequired)
            .map((route) => ({ method: route.method, path: route.path, group: rateGroupOf(route) })),
        ),
      ),
    },
  };
  const requestId = () => randomUUID();
  return {
    /** An answer of a mock method: the authorizer runs first, as in AWS, for its context. */
    async behindAuthorizer(
      answer: EdgeAnswer,
      request: IncomingMessage,
      resource: string,
    ): Promise<APIGatewayProxyResult> {
      const id = requestId();
      const event = {
        type: 'REQUEST',
        methodArn: `arn:aws:execute-api:local:000000000000:local/local/${request.method ?? 'GET'}${resource}`,
        resource,
        path: resource,
        httpMethod: request.method ?? 'GET',
        headers: Object.fromEntries(
          Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
        ),
        requestContext: {
          requestId: id,
          requestTimeEpoch: deps.clock.now().getTime(),
          identity: { sourceIp: (request.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '') },
        },
      } as unknown as APIGatewayRequestAuthorizerEvent;
      const { context } = await authorizeEdge(event, authorizer);
      const strings = Object.fromEntries(
        Object.entries(context ?? {}).map(([name, value]) => [name, String(value)]),
      );
      return toResult(renderEdgeAnswer(answer, { requestId: id, authorizer: strings }));
    },
    /** Over API Gateway's 10 MB: answered before any authorizer, so with no context at all. */
    tooLarge: (): APIGatewayProxyResult =>
      toResult(
        renderEdgeAnswer(gatewayAnswer(edgeResponse('REQUEST_TOO_LARGE')), { requestId: requestId() }),
      ),
  };
}

const toResult = (rendered: ReturnType<typeof renderEdgeAnswer>): APIGatewayProxyResult => ({
  statusCode: rendered.statusCode,
  headers: { 'Content-Type': 'application/json', ...rendered.headers },
  body: rendered.body,
});

function fallbackHandler(deps: AppDeps, error: () => Error): HttpHandler {
  return httpEndpoint(fallbackRoute, deps, async () => {
    throw error();
  });
}

async function readBody(request: IncomingMessage): Promise<string | null | 'too-large'> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > GATEWAY_MAX_BODY_BYTES) return 'too-large';
    chunks.push(chunk);
  }
  return size === 0 ? null : Buffer.concat(chunks).toString('utf8');
}

function toEvent(
  request: IncomingMessage,
  url: URL,
  body: string | null,
  resourcePath: string,
  pathParameters: Record<string, string> | null,
): APIGatewayProxyEvent {
  const headers: Record<string, string> = {};
  const multiValueHeaders: Record<string, string[]> = {};
  for (let index = 0; index < request.rawHeaders.length; index += 2) {
    const name = request.rawHeaders[index] as string;
    const value = request.rawHeaders[index + 1] as string;
    headers[name] = value;
    (multiValueHeaders[name] ??= []).push(value);
  }
  const query: Record<string, string> = {};
  const multiQuery: Record<string, string[]> = {};
  for (const [name, value] of url.searchParams) {
    query[name] = value;
    (multiQuery[name] ??= []).push(value);
  }
  const method = request.method ?? 'GET';
  const sourceIp = (request.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  return {
    resource: resourcePath,
    path: url.pathname,
    httpMethod: method,
    headers,
    multiValueHeaders,
    queryStringParameters: url.searchParams.size ? query : null,
    multiValueQueryStringParameters: url.searchParams.size ? multiQuery : null,
    pathParameters,
    stageVariables: null,
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      authorizer: null,
      protocol: `HTTP/${request.httpVersion}`,
      httpMethod: method,
      path: url.pathname,
      stage: 'local',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'local',
      resourcePath,
      identity: {
        sourceIp,
        userAgent: request.headers['user-agent'] ?? null,
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        user: null,
        userArn: null,
      },
    },
  };
}

/** The Lambda context a function is handed (also used by bench/cost.ts, which invokes handlers directly). */
export function lambdaContext(functionName: string, timeoutSeconds: number): ServiceContext {
  const deadline = Date.now() + timeoutSeconds * 1000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

function send(response: ServerResponse, result: APIGatewayProxyResult): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {}))
    headers[name] = values.map(String);
  response.writeHead(result.statusCode, headers);
  response.end(result.body);
}

/** The path's parameters, or the name of the first one that is not valid percent-encoded UTF-8. */
function decodeParameters(
  names: string[],
  values: string[],
): { parameters: Record<string, string> | null } | { malformed: string } {
  if (names.length === 0) return { parameters: null };
  const parameters: Record<string, string> = {};
  for (const [index, name] of names.entries()) {
    try {
      parameters[name] = decodeURIComponent(values[index] ?? '');
    } catch {
      // API Gateway refuses such paths before any function runs.
      return { malformed: name };
    }
  }
  return { parameters };
}

export interface HttpServerHandle {
  url: string;
  server: Server;
  /**
   * CPU microseconds this adapter spent standing in for API Gateway (routing, building the event
   * and the Lambda context, writing the result back) since the server started: work a deployed
   * function never does, which the benchmarks leave out of the service's CPU (bench/per-request.ts).
   */
  adapterCpuMicros(): number;
  close(): Promise<void>;
}

export async function startHttpServer(
  deps: AppDeps,
  options: {
    host: string;
    port: number;
    routes?: readonly RouteDeclaration[];
    sandboxUrl?: string;
    /** Gives each request a logger of its own, as each Lambda invocation has (local/invocation-scope.ts). */
    invocationScope?: InvocationScope;
    /** Called once a function has answered (it may have written what the stream dispatcher reads). */
    onInvoked?: () => void;
    /**
     * Import each route's function on its first request, as Lambda does at a function's cold start,
     * instead of all of them before listening. A test's stack serves a handful of the routes; `npm start`
     * imports them all, so that a function that cannot load stops the start.
     */
    lazyHandlers?: boolean;
  },
): Promise<HttpServerHandle> {
  const declared = options.routes ?? routes;
  const loaded = servedRoutes(deps, declared);
  if (!options.lazyHandlers) await Promise.all(loaded.map((entry) => entry.handler()));
  const edge = edgeAnswers(deps, declared);
  const badPath = new Map<string, HttpHandler>();
  const badPathFor = (name: string): HttpHandler => {
    let handler = badPath.get(name);
    if (!handler) {
      handler = fallbackHandler(
        deps,
        () =>
          new InvalidRequestError('Invalid path parameter', [
            { field: name, message: 'is not valid percent-encoded UTF-8' },
          ]),
      );
      badPath.set(name, handler);
    }
    return handler;
  };

  /** '0' for a literal segment, '1' for a parameter: the smaller string is the more specific path. */
  const shape = (path: string) =>
    path
      .split('/')
      .map((segment) => (segment.startsWith('{') ? '1' : '0'))
      .join('');
  const bySpecificity = (a: string, b: string) => shape(a).localeCompare(shape(b));

  let adapterCpu = 0;
  const cpuSince = (start: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(start);
    adapterCpu += used.user + used.system;
  };
  const server = createServer((request, response) => {
    void (async () => {
      const body = await readBody(request);
      let start = process.cpuUsage();
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (body === 'too-large') {
        // API Gateway answers oversized payloads itself, before any function runs.
        send(response, edge.tooLarge());
        cpuSince(start);
        return;
      }
      // The developer console is the local stack's own page, not an API route (local/console).
      if (await serveConsole(request, response, url, { body, sandboxUrl: options.sandboxUrl })) return;
      // As API Gateway: the resource first, a literal segment winning over a {param} one (GET
      // /receipts/encrypt is that resource's 405, not GET /receipts/{receiptId}), then the method on it.
      const matching = loaded.filter((entry) => entry.pattern.test(url.pathname));
      const resource = matching.map((entry) => entry.route.path).sort(bySpecificity)[0];
      const candidates = matching.filter((entry) => entry.route.path === resource);
      const match = candidates.find((entry) => entry.route.method === request.method);
      if (!match) {
        // No function: API Gateway's mocks answer 405 on a routed path and 404 anywhere else.
        const answer = resource
          ? methodNotAllowedAnswer(candidates.map((entry) => entry.route.method))
          : notFoundAnswer;
        send(response, await edge.behindAuthorizer(answer, request, resource ?? '/{proxy+}'));
        return;
      }
      const values = match.pattern.exec(url.pathname)?.slice(1) ?? [];
      const decoded = decodeParameters(match.paramNames, values);
      const pathParameters = 'parameters' in decoded ? decoded.parameters : null;
      const badPathHandler = 'malformed' in decoded ? badPathFor(decoded.malformed) : undefined;
      const resourcePath = match.route.path;
      const event = toEvent(request, url, body, resourcePath, pathParameters);
      const context = lambdaContext(match.route.name, match.route.timeoutSeconds ?? 10);
      // The invocation's own logger stands in for Lambda's one-invocation-per-instance: the adapter's work.
      const invocationLogger = options.invocationScope?.loggerFor();
      cpuSince(start);
      // A function imported on its first request: its cold start, the function's time, not the adapter's.
      let handler: HttpHandler;
      try {
        handler = badPathHandler ?? (await match.handler());
      } catch (error) {
        // A function that cannot initialise is an integration failure to API Gateway, answered with its response.
        deps.logger.error('function failed to load', {
          route: match.route.name,
          error: error instanceof Error ? error : String(error),
        });
        send(
          response,
          await edge.behindAuthorizer(
            gatewayAnswer(edgeResponse('INTEGRATION_FAILURE')),
            request,
            resourcePath,
          ),
        );
        return;
      }
      const invoke = () => handler(event, context);
      const result = await (options.invocationScope && invocationLogger
        ? options.invocationScope.run(invocationLogger, invoke)
        : invoke());
      start = process.cpuUsage();
      send(response, result);
      cpuSince(start);
      options.onInvoked?.();
    })().catch((error: unknown) => {
      deps.logger.error('local adapter failed', { error: error instanceof Error ? error : String(error) });
      if (!response.headersSent) send(response, errorResponse(error, randomUUID(), new Date()));
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolveListen());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `http://${options.host}:${port}`,
    server,
    adapterCpuMicros: () => adapterCpu,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.closeAllConnections();
        server.close(() => resolveClose());
      }),
  };
}
