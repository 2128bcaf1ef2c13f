import { randomUUID } from 'node:crypto';
import middy, { type MiddlewareObj, type MiddyfiedHandler } from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import httpSecurityHeaders from '@middy/http-security-headers';
import type { Tracer } from '@aws-lambda-powertools/tracer';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { ForeignApiKeyError, type ApiKeyAuthenticator, type Caller } from '../api-key-auth.js';
import type { Clock } from '../clock.js';
import type { ServiceConfig } from '../config.js';
import { uncountedWindow, type RateLimiter, type RateLimitState } from '../db/rate-limits.js';
import {
  ForbiddenError,
  InvalidRequestError,
  PayloadTooLargeError,
  isDependencyOutage,
  RateLimitExceededError,
  ServiceUnavailableError,
  UnauthorizedError,
} from '../errors.js';
import {
  rateGroupOf,
  type BodyOf,
  type HeadersOf,
  type ParamsOf,
  type QueryOf,
  type RouteDeclaration,
} from '../contract/route.js';
import type { Logger } from '../log.js';
import type { Telemetry } from '../observability.js';
import type { TierTable } from '../tiers.js';
import { errorResponse } from './error-envelope.js';
import { observability } from './observability-middleware.js';
import { parseInput } from './validation.js';

/** What every endpoint's middleware needs, whatever the endpoint does. */
export interface PlatformDeps {
  config: ServiceConfig;
  clock: Clock;
  logger: Logger;
  authenticator: ApiKeyAuthenticator;
  rateLimiter: RateLimiter;
  tiers: TierTable;
  telemetry: Telemetry;
  tracer?: Tracer;
}

export interface RequestMeta {
  requestId: string;
  sourceIp: string;
  receivedAt: Date;
  caller: Caller | null;
  rateLimit?: RateLimitState;
  /** A page's own policy (its per-response nonce), sent instead of the API's `default-src 'none'`. */
  contentSecurityPolicy?: string;
}

/** What the pipeline hands an endpoint: every part its route declares, validated and typed. */
export interface EndpointRequest<R extends RouteDeclaration> {
  body: BodyOf<R>;
  params: ParamsOf<R>;
  query: QueryOf<R>;
  headers: HeadersOf<R>;
  meta: RequestMeta;
  /** The Lambda context: remaining time bounds idempotency locks. */
  lambdaContext: Context;
}

/** A request whose route requires an API key always has a caller. */
export interface AuthenticatedRequest<R extends RouteDeclaration> extends EndpointRequest<R> {
  caller: Caller;
}

/**
 * `data` is wrapped in the success envelope; `document` is sent as it is (the OpenAPI contract);
 * `text` is sent as it is with its content type (the API reference page and its scripts).
 */
export type EndpointResult =
  | { data: unknown; headers?: Record<string, string> }
  | { document: unknown }
  | { text: string; contentType: string; contentSecurityPolicy?: string };

interface ParsedInput {
  params?: unknown;
  query?: unknown;
  headers?: unknown;
  body?: unknown;
}
export type ServiceContext = Context & { meta?: RequestMeta; input?: ParsedInput };
export type HttpHandler = MiddyfiedHandler<
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  Error,
  ServiceContext
>;
type Middleware = MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult, Error, ServiceContext>;

const metaOf = (context: ServiceContext): RequestMeta => {
  if (!context.meta) throw new Error('request metadata missing: the pipeline did not run');
  return context.meta;
};

const RATE_WINDOW_SECONDS = 60;

/** Request id, rate-limit and caching headers on every response, success or error; one access log line. */
function responseHeaders(deps: PlatformDeps, route: RouteDeclaration): Middleware {
  const decorate = (
    request: middy.Request<APIGatewayProxyEvent, APIGatewayProxyResult, Error, ServiceContext>,
  ) => {
    const response = request.response;
    const meta = request.context.meta;
    if (!response || !meta) return;
    response.headers = {
      ...response.headers,
      'X-Request-Id': meta.requestId,
      // Receipts, tokens and keys must never sit in a shared cache.
      'Cache-Control': 'no-store',
      // After the security headers middleware, which sets the API's policy on every response.
      ...(meta.contentSecurityPolicy ? { 'Content-Security-Policy': meta.contentSecurityPolicy } : {}),
      ...(meta.rateLimit
        ? {
            'X-RateLimit-Limit': String(meta.rateLimit.limit),
            'X-RateLimit-Remaining': String(meta.rateLimit.remaining),
            'X-RateLimit-Reset': String(meta.rateLimit.resetAt),
          }
        : {}),
    };
    deps.logger.info('request', {
      requestId: meta.requestId,
      route: route.name,
      status: response.statusCode,
      clientId: meta.caller?.clientId,
      durationMs: deps.clock.now().getTime() - meta.receivedAt.getTime(),
    });
  };
  return {
    before: (request) => {
      const context = request.event.requestContext;
      request.context.meta = {
        requestId: context?.requestId || randomUUID(),
        sourceIp: context?.identity?.sourceIp || 'unknown',
        receivedAt: deps.clock.now(),
        caller: null,
      };
    },
    after: decorate,
    onError: decorate,
  };
}

/** API key, role and rate limit: per key and endpoint group, or per source IP for keyless calls. */
function authorise(deps: PlatformDeps, route: RouteDeclaration): Middleware {
  return {
    before: async (request) => {
      const meta = metaOf(request.context);
      const now = deps.clock.now();
      // While DynamoDB is unreachable, keys cannot be checked nor requests counted: keyed routes answer
      // 503, and the public ones carry on uncounted so that health can still report the outage.
      let outage = false;
      const unlessOutage =
        <T>(fallback: T) =>
        (error: unknown): T => {
          if (!isDependencyOutage(error)) throw error;
          outage = true;
          return fallback;
        };
      const headers = request.event.headers ?? {};
      // A key of another environment is counted by source IP like any bad key, then refused by name
      // on a keyed route; a public route ignores it, as it ignores any key.
      let foreignKey: ForeignApiKeyError | undefined;
      const caller = await deps.authenticator.authenticate(headers['x-api-key']).catch((error: unknown) => {
        if (!(error instanceof ForeignApiKeyError)) return unlessOutage(null)(error);
        foreignKey = error;
        return null;
      });
      const group = rateGroupOf(route);
      const [bucket, limit] = caller
        ? [`key#${caller.keyId}#${group}`, deps.tiers[caller.tier].requestsPerMinute[group]]
        : [`ip#${meta.sourceIp}`, deps.config.anonymousRequestsPerMinute];
      meta.rateLimit = await deps.rateLimiter
        .hit(bucket, limit, RATE_WINDOW_SECONDS, now)
        .catch(unlessOutage(uncountedWindow(limit, RATE_WINDOW_SECONDS, now)));
      if (!meta.rateLimit.allowed) {
        deps.telemetry.count('RateLimitRefusals', { group: caller ? group : 'anonymous' });
        throw new RateLimitExceededError(meta.rateLimit.resetAt - now.getTime() / 1000);
      }
      if (!route.apiKeyRequired) return;
      if (outage)
        throw new ServiceUnavailableError('The service cannot verify API keys right now; retry shortly');
      if (!caller) throw foreignKey ?? new UnauthorizedError(unauthorizedMessage(headers));
      if (!route.roles.some((role) => caller.roles.includes(role))) {
        throw new ForbiddenError(
          `This operation needs an API key with the role ${route.roles.map((role) => `"${role}"`).join(' or ')}; ` +
            `this key has ${caller.roles.length ? caller.roles.map((role) => `"${role}"`).join(' and ') : 'no role'}`,
        );
      }
      meta.caller = caller;
    },
  };
}

/** Says what to fix: the usual mistake is a key sent as a bearer token. */
function unauthorizedMessage(headers: Record<string, string | undefined>): string {
  if (headers['x-api-key']) return 'The API key in X-API-Key is not valid';
  if (headers.authorization)
    return 'Send the API key in the X-API-Key header; the Authorization header is not read';
  return 'Missing API key: send it in the X-API-Key header';
}

function bodySizeLimit(maxBytes: number): Middleware {
  return {
    before: (request) => {
      const body = request.event.body;
      if (
        typeof body === 'string' &&
        Buffer.byteLength(body, request.event.isBase64Encoded ? 'base64' : 'utf8') > maxBytes
      ) {
        throw new PayloadTooLargeError(maxBytes);
      }
    },
  };
}

/** The declared request parts, parsed; every bad field of every part is named in one 400. */
function validate(route: RouteDeclaration): Middleware {
  const { params, query, headers, body } = route.request;
  return {
    before: (request) => {
      const event = request.event;
      const parts = [
        params && parseInput(params, event.pathParameters ?? {}),
        query && parseInput(query, event.queryStringParameters ?? {}),
        // Headers arrive lower-cased (the normaliser); the schema spells them as documented.
        headers &&
          parseInput(
            headers,
            Object.fromEntries(
              Object.keys(headers.shape).flatMap((name) => {
                const value = event.headers?.[name.toLowerCase()];
                return value === undefined ? [] : [[name, value]];
              }),
            ),
          ),
        body && parseInput(body.schema, event.body),
      ] as const;
      const fields = parts.flatMap((part) => (part && !part.success ? part.fields : []));
      if (fields.length > 0) throw new InvalidRequestError('Invalid request', fields);
      const [parsedParams, parsedQuery, parsedHeaders, parsedBody] = parts.map((part) =>
        part && part.success ? part.data : undefined,
      );
      request.context.input = {
        params: parsedParams,
        query: parsedQuery,
        headers: parsedHeaders,
        body: parsedBody,
      };
    },
  };
}

function errorEnvelope(deps: PlatformDeps): Middleware {
  return {
    onError: (request) => {
      const requestId = request.context.meta?.requestId ?? randomUUID();
      request.response = errorResponse(request.error, requestId, deps.clock.now(), deps.logger);
    },
  };
}

/**
 * Wraps an endpoint's plain function in the shared Middy chain, in Middy's documented order: header
 * normaliser, (authorisation), body parser, validation of every declared request part, and the error
 * handler last.
 */
export function httpEndpoint<R extends RouteDeclaration>(
  route: R,
  deps: PlatformDeps,
  handle: (request: AuthenticatedRequest<R>) => Promise<EndpointResult>,
): HttpHandler {
  const base = async (
    _event: APIGatewayProxyEvent,
    context: ServiceContext,
  ): Promise<APIGatewayProxyResult> => {
    const meta = metaOf(context);
    const input = context.input ?? {};
    const result = await handle({
      body: input.body as BodyOf<R>,
      params: input.params as ParamsOf<R>,
      query: input.query as QueryOf<R>,
      headers: input.headers as HeadersOf<R>,
      meta,
      lambdaContext: context,
      // Keyless routes get a null caller; their handlers do not read it.
      caller: meta.caller as Caller,
    });
    if ('text' in result) {
      if (result.contentSecurityPolicy) meta.contentSecurityPolicy = result.contentSecurityPolicy;
      return { statusCode: 200, headers: { 'Content-Type': result.contentType }, body: result.text };
    }
    if ('document' in result) {
      return {
        statusCode: 200,
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(result.document),
      };
    }
    return {
      statusCode: route.response.status ?? 200,
      headers: { 'Content-Type': 'application/json', ...result.headers },
      body: JSON.stringify({ success: true, data: result.data }),
    };
  };
  const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, ServiceContext>(base)
    // First, so it wraps everything: the Lambda context in every log line, the trace, the metrics flush.
    .use(observability(deps))
    .use(responseHeaders(deps, route))
    .use(
      httpSecurityHeaders({
        contentSecurityPolicy: { 'default-src': "'none'", 'frame-ancestors': "'none'" },
      }),
    )
    .use(httpHeaderNormalizer())
    .use(authorise(deps, route))
    .use(bodySizeLimit(deps.config.maxBodyBytes));
  if (route.request.body) handler.use(httpJsonBodyParser());
  return handler.use(validate(route)).use(errorEnvelope(deps));
}
