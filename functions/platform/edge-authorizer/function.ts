import type { RouteDefinition } from '../../../lib/kernel/route.js';

/** What the CDK stack needs of the authorizer function: the shape of a route, without an HTTP path. */
export const edgeAuthorizerFunction: RouteDefinition = {
  name: 'edge-authorizer',
  method: 'GET',
  path: '/api/v1/*',
  entry: 'functions/platform/edge-authorizer/handler.ts',
  apiKeyRequired: false,
  roles: [],
  // Reads one key record by id, and the request's rate counters for the gateway responses; never writes.
  tables: { apiKeys: 'read', rateLimits: 'read' },
  // API Gateway waits at most 30 s for an authorizer; a slow table read should fail well before that.
  timeoutSeconds: 5,
};
