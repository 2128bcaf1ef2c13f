import { defineRoute } from '../../../lib/kernel/route.js';
import type { HealthReport } from '../../../lib/platform/health.js';
import { dateTime } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';
import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';

const dependencyStatus = lazySchema(() =>
  z
    .strictObject({
      status: z.enum(['up', 'down']),
      latencyMs: z.number().int().min(0),
      detail: z
        .string()
        .optional()
        .meta({ description: 'Why it is down: an error name or "timed out", never a message.' }),
    })
    .meta({ id: 'DependencyStatus' }),
);

export const healthReportResponse = lazySchema(() =>
  z
    .strictObject({
      status: z.enum(['ok', 'degraded']),
      stage: z.string(),
      time: dateTime,
      dependencies: z.record(z.string(), dependencyStatus).meta({
        description: 'dynamodb, escrowKey and each configured gateway (gateway_a, gateway_b).',
      }),
    })
    .meta({ id: 'HealthReport', description: 'Every dependency checked in parallel, 3 s timeout each.' }),
);

export const responseTypeMatches: SameType<z.output<typeof healthReportResponse>, HealthReport> = true;

export const healthRoute = defineRoute({
  name: 'health',
  method: 'GET',
  path: '/api/v1/health',
  entry: 'functions/platform/health/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read' },
  escrow: 'wrap',
  gateways: true,
  docs: {
    tag: 'health',
    summary: 'Check the service and its dependencies',
    description:
      'Checks DynamoDB, the escrow key and each configured payment gateway in parallel. No API key; calls ' +
      'count against the per-source-IP budget.',
    details:
      'No key. `200` with `{ status, stage, time, dependencies }` when DynamoDB, the escrow key and ' +
      'each configured gateway answer; `503 service_unavailable` naming what is down otherwise (the ' +
      'full report is in `error.details`). One report is reused for 10 s per instance, so a burst of ' +
      'health checks is one round of checks.',
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
