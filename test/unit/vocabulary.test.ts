import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { AuditEvent } from '../../lib/db/audit.js';
import { errorResponse } from '../../lib/http/error-envelope.js';
import { type RouteErrors } from '../../lib/kernel/route.js';
import { LogTelemetry } from '../../lib/kernel/telemetry.js';
import { createLogger } from '../../lib/kernel/log.js';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { FixtureQuotaError, fixtureRoute } from './vocabulary/fixture-feature.js';

/**
 * A feature owns its vocabulary (docs/ARCHITECTURE.md, "Adding an endpoint"): its error classes, metric
 * names and audit kinds live in lib/<feature>/vocabulary.ts and are registered into the kernel's
 * catalogues by declaration merging; the kernel, the audit writer and the OpenAPI builder name none.
 */
const root = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const filesOf = (folder: string) =>
  readdirSync(join(root, folder))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => `${folder}/${name}`);
const features = readdirSync(join(root, 'lib'), { withFileTypes: true })
  .filter(
    (entry) => entry.isDirectory() && readdirSync(join(root, 'lib', entry.name)).includes('vocabulary.ts'),
  )
  .map((entry) => entry.name);
const block = (source: string, name: string) =>
  new RegExp(`interface ${name} \\{\\n([\\s\\S]*?)\\n  \\}\\n\\}`).exec(source)?.[1] ?? '';
const vocabulary = features.map((feature) => {
  const source = read(`lib/${feature}/vocabulary.ts`);
  return {
    feature,
    classes: [...source.matchAll(/^export class (\w+) extends AppError</gm)].map((match) => match[1]!),
    registered: [...block(source, 'ErrorRegistry').matchAll(/^ {4}(\w+): (\w+);$/gm)].map(
      (match) => match[1]!,
    ),
    codes: [...source.matchAll(/readonly code = '(\w+)'/g)].map((match) => match[1]!),
    metrics: [...block(source, 'MetricDimensions').matchAll(/^ {4}(\w+): /gm)].map((match) => match[1]!),
    auditKinds: [...block(source, 'AuditKinds').matchAll(/^ {4}'([\w.-]+)': true;$/gm)].map(
      (match) => match[1]!,
    ),
  };
});
const libFiles = (folder = 'lib'): string[] =>
  readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? libFiles(`${folder}/${entry.name}`)
      : entry.name.endsWith('.ts')
        ? [`${folder}/${entry.name}`]
        : [],
  );

describe("the features' vocabulary", () => {
  it('is declared by the features, each registering every error class it declares', () => {
    expect(features).toEqual(
      expect.arrayContaining([
        'access',
        'gateways',
        'merchants',
        'onboarding',
        'payments',
        'receipts',
        'webhooks',
      ]),
    );
    for (const { feature, classes, registered } of vocabulary) {
      expect([feature, registered.sort()]).toEqual([feature, [...classes].sort()]);
    }
    // Outside the kernel, an error class is declared only in a feature's vocabulary file.
    const strays = libFiles()
      .filter((path) => !path.startsWith('lib/kernel/') && !path.endsWith('/vocabulary.ts'))
      .filter((path) => /^export class \w+ extends AppError</m.test(read(path)));
    expect(strays).toEqual([]);
  });

  it('is named nowhere in the kernel, the audit writer or the OpenAPI builder', () => {
    const catalogueFiles = [...filesOf('lib/kernel'), 'lib/db/audit.ts', ...filesOf('lib/openapi')];
    const names = vocabulary.flatMap(({ classes, codes, metrics, auditKinds }) => [
      ...classes.map((name) => new RegExp(`\\b${name}\\b`)),
      ...codes.map((code) => new RegExp(`'${code}'`)),
      ...metrics.map((metric) => new RegExp(`\\b${metric}\\b`)),
      ...auditKinds.map((kind) => new RegExp(`'${kind.replace(/\./g, '\\.')}'`)),
    ]);
    expect(names.length).toBeGreaterThan(60);
    const named = catalogueFiles.flatMap((path) =>
      names.filter((name) => name.test(read(path))).map((name) => `${path}: ${name.source}`),
    );
    expect(named).toEqual([]);
  });

  it('holds every metric the use cases count and every audit kind they write', () => {
    const metrics = new Set(['RateLimitRefusals', ...vocabulary.flatMap((entry) => entry.metrics)]);
    const kinds = new Set(vocabulary.flatMap((entry) => entry.auditKinds));
    const sources = [...libFiles(), ...libFiles('functions'), ...libFiles('scripts')].map(read).join('\n');
    const counted = [...sources.matchAll(/\.count\(\s*'(\w+)'/g)].map((match) => match[1]!);
    expect(counted.length).toBeGreaterThan(10);
    expect(counted.filter((metric) => !metrics.has(metric))).toEqual([]);
    const audited = [...sources.matchAll(/action: '([\w-]+\.[\w.-]+)'/g)].map((match) => match[1]!);
    expect(audited.length).toBeGreaterThan(10);
    expect(audited.filter((kind) => !kinds.has(kind))).toEqual([]);
  });
});

describe('a new feature error, metric and audit kind, with no kernel edit', () => {
  it('reaches the error envelope', () => {
    const response = errorResponse(new FixtureQuotaError(3), 'req-1', new Date('2026-11-28T10:00:00Z'));
    expect(response.statusCode).toBe(429);
    expect(response.headers['Retry-After']).toBe('60');
    expect(JSON.parse(response.body)).toEqual({
      success: false,
      error: {
        code: 'FIXTURE_QUOTA_SPENT',
        message: 'At most 3 fixtures a day',
        details: { limit: 3 },
        timestamp: '2026-11-28T10:00:00.000Z',
        request_id: 'req-1',
      },
    });
  });

  it("reaches the OpenAPI document's errors of the route that documents it", () => {
    const document = buildOpenApiDocument([fixtureRoute]);
    const responses = document.paths?.['/api/v1/fixtures/{fixtureId}/quota']?.post?.responses as Record<
      string,
      { content: { 'application/json': { schema: { allOf: { properties?: { error?: unknown } }[] } } } }
    >;
    const error = responses['429']!.content['application/json'].schema.allOf[1]!.properties!.error;
    expect(error).toMatchObject({
      properties: { code: { enum: ['FIXTURE_QUOTA_SPENT', 'rate_limit_exceeded'] } },
    });
  });

  it('is counted and audited under the names it registered, type-checked', () => {
    const telemetry = new LogTelemetry(createLogger({ level: 'SILENT' }));
    telemetry.count('FixtureQuotaRefusals', { plan: 'small' });
    // @ts-expect-error the dimensions are the registered ones
    telemetry.count('FixtureQuotaRefusals', { plan: 'medium' });
    // @ts-expect-error a metric nobody registered
    telemetry.count('FixtureUnknown');
    expect(telemetry.total('FixtureQuotaRefusals', { plan: 'small' })).toBe(1);
    const event: AuditEvent = { action: 'fixture.refuse', outcome: 'failure', requestId: 'r', clientId: 'c' };
    const unknown: AuditEvent = {
      // @ts-expect-error an audit kind nobody registered
      action: 'fixture.unknown',
      outcome: 'failure',
      requestId: 'r',
      clientId: 'c',
    };
    expect([event.action, unknown.action]).toEqual(['fixture.refuse', 'fixture.unknown']);
  });

  it('is refused in a route that documents a code no registered error has under that status', () => {
    // @ts-expect-error FIXTURE_QUOTA_SPENT is registered under 429, not 409
    const wrongStatus: RouteErrors = { 409: { description: 'x', codes: ['FIXTURE_QUOTA_SPENT'] } };
    // @ts-expect-error nobody registered this code
    const unknown: RouteErrors = { 429: { description: 'x', codes: ['FIXTURE_NEVER_REGISTERED'] } };
    expect([wrongStatus, unknown]).toHaveLength(2);
  });
});
