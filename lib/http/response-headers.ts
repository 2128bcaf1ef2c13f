import { createHash, randomUUID } from 'node:crypto';
import type middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { PlatformDeps } from '../app/deps.js';
import { deprecationHeaders, type RouteDeclaration } from '../kernel/route.js';
import type { Middleware, ServiceContext } from './context.js';
import { correlate } from './correlation.js';

/** Request id, rate-limit and caching headers on every response, success or error; one access log line. */
export function responseHeaders(deps: PlatformDeps, route: RouteDeclaration): Middleware {
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
      ...(route.deprecated ? deprecationHeaders(route.deprecated, meta.receivedAt) : {}),
      ...(meta.rateLimit
        ? {
            'X-RateLimit-Limit': String(meta.rateLimit.limit),
            'X-RateLimit-Remaining': String(meta.rateLimit.remaining),
            'X-RateLimit-Reset': String(meta.rateLimit.resetAt),
          }
        : {}),
    };
    if (route.cache && response.statusCode === 200) {
      // Public by design (the key log, a merchant's JWKS): a cache may keep it, and revalidate by ETag.
      response.headers['Cache-Control'] = `public, max-age=${route.cache.maxAgeSeconds}`;
      response.headers.ETag = `"${createHash('sha256').update(String(response.body)).digest('base64url')}"`;
    }
    // requestId, route and clientId are on every line of the request already (correlate, below).
    deps.logger.info('request', {
      status: response.statusCode,
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
      correlate(deps, { requestId: request.context.meta.requestId, route: route.name });
    },
    after: decorate,
    onError: decorate,
  };
}
