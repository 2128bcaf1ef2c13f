import middy from '@middy/core';
import httpHeaderNormalizer from '@middy/http-header-normalizer';
import httpSecurityHeaders from '@middy/http-security-headers';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { Caller } from '../api-keys/authenticator.js';
import type { PlatformDeps } from '../app/deps.js';
import type { BodyOf, HeadersOf, ParamsOf, QueryOf, RouteDeclaration } from '../kernel/route.js';
import { authorise } from './authorise.js';
import { bodySizeLimit } from './body-size-limit.js';
import { correlateReceipt } from './correlation.js';
import {
  metaOf,
  type AuthenticatedRequest,
  type EndpointResult,
  type HttpHandler,
  type ServiceContext,
} from './context.js';
import { errorEnvelope } from './error-envelope-middleware.js';
import { jsonBody } from './json-body.js';
import { observability } from './observability-middleware.js';
import { responseHeaders } from './response-headers.js';
import { validateRequest } from './validate-request.js';

export type {
  AuthenticatedRequest,
  EndpointRequest,
  EndpointResult,
  HttpHandler,
  RequestMeta,
  ServiceContext,
} from './context.js';
export type { PlatformDeps } from '../app/deps.js';

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
  // A raw body (a provider's signed event) reaches the endpoint as the exact string that arrived.
  if (route.request.body && !route.request.body.raw) handler.use(jsonBody());
  return handler.use(validateRequest(route)).use(correlateReceipt(deps)).use(errorEnvelope(deps));
}
