import { defineRoute } from '../contract/route.js';
import { healthReportResponse } from '../openapi/responses.js';

export const healthRoute = defineRoute({
  name: 'health',
  method: 'GET',
  path: '/api/v1/health',
  entry: 'functions/health/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'readWrite', apiKeys: 'read' },
  escrow: 'wrap',
  gateways: true,
  docs: {
    tag: 'health',
    summary: 'Check the service and its dependencies',
    description:
      'Checks DynamoDB, the escrow key and each configured payment gateway in parallel. No API key; calls ' +
      'count against the per-source-IP budget.',
  },
  request: {},
  response: { description: 'Every dependency is up.', schema: healthReportResponse, enveloped: true },
  errors: {
    503: {
      description: 'A dependency is down; `error.details` is the full health report.',
      details: 'HealthReport',
    },
  },
});
