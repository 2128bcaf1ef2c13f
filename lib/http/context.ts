import type { MiddlewareObj, MiddyfiedHandler } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { Caller } from '../api-keys/authenticator.js';
import type { RateLimitState } from '../db/rate-limits.js';
import type { BodyOf, HeadersOf, ParamsOf, QueryOf, RouteDeclaration } from '../kernel/route.js';

/*
 * What the middlewares of lib/http share: the request's metadata and parsed input, kept on the Lambda
 * context as the chain runs, and what the endpoint is handed at its end.
 */
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

export interface ParsedInput {
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
export type Middleware = MiddlewareObj<APIGatewayProxyEvent, APIGatewayProxyResult, Error, ServiceContext>;

export const metaOf = (context: ServiceContext): RequestMeta => {
  if (!context.meta) throw new Error('request metadata missing: the pipeline did not run');
  return context.meta;
};
