import * as z from 'zod';
import { AppError } from '../../../lib/kernel/errors.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

/**
 * A feature that is not in lib/: its vocabulary is declared here exactly as a lib/<feature>/vocabulary.ts
 * declares its own, and nothing under lib/kernel/, lib/db/audit.ts or lib/openapi/ names it. That this
 * file type-checks (`tsc -p .` includes test/) shows the catalogues take a feature's error, metric and
 * audit kind without a kernel edit; test/unit/vocabulary.test.ts shows them reaching the envelope and
 * the OpenAPI document. The names are the fixture's own, so no route of the service documents them.
 */
declare module '../../../lib/kernel/errors.js' {
  interface ErrorRegistry {
    FixtureQuotaError: FixtureQuotaError;
  }
}
declare module '../../../lib/kernel/telemetry.js' {
  interface MetricDimensions {
    /** A fixture request refused at its quota, by plan. */
    FixtureQuotaRefusals: { plan: 'small' | 'large' };
  }
}
declare module '../../../lib/db/audit.js' {
  interface AuditKinds {
    'fixture.refuse': true;
  }
}

export class FixtureQuotaError extends AppError<429> {
  readonly status = 429 as const;
  readonly code = 'FIXTURE_QUOTA_SPENT';
  constructor(limit: number) {
    super(`At most ${limit} fixtures a day`, { limit }, { 'Retry-After': '60' });
  }
}

export const fixtureRoute = defineRoute({
  name: 'fixture-quota',
  method: 'POST',
  path: '/api/v1/fixtures/{fixtureId}/quota',
  entry: 'test/unit/vocabulary/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables },
  docs: { tag: 'receipts', summary: 'A fixture', description: 'Spends a fixture quota.' },
  request: { params: z.object({ fixtureId: uuid }) },
  response: { description: 'Spent.', schema: z.strictObject({ spent: z.boolean() }), enveloped: true },
  errors: {
    429: { description: 'The fixture quota (FIXTURE_QUOTA_SPENT) is spent.', codes: ['FIXTURE_QUOTA_SPENT'] },
  },
});
