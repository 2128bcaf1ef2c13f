import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../kernel/clock.js';
import { requireTable } from '../kernel/config.js';
import type { AppDeps } from '../app/deps.js';

export interface DependencyStatus {
  status: 'up' | 'down';
  latencyMs: number;
  detail?: string;
}

export interface HealthReport {
  status: 'ok' | 'degraded';
  stage: string;
  time: string;
  dependencies: Record<string, DependencyStatus>;
}

async function probe(
  clock: Clock,
  timeoutMs: number,
  check: () => Promise<unknown>,
): Promise<DependencyStatus> {
  const started = clock.now().getTime();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), timeoutMs);
      }),
    ]);
    return { status: 'up', latencyMs: clock.now().getTime() - started };
  } catch (error) {
    // The error's name only: messages from SDKs can carry endpoints or account details.
    const detail =
      error instanceof Error && error.message === 'timed out'
        ? 'timed out'
        : error instanceof Error
          ? error.name
          : 'error';
    return { status: 'down', latencyMs: clock.now().getTime() - started, detail };
  } finally {
    clearTimeout(timer);
  }
}

export type HealthDeps = Pick<AppDeps, 'config' | 'clock' | 'dynamo' | 'escrow' | 'gateways'>;

/** Checks every dependency in parallel: DynamoDB, the escrow key and each configured gateway. */
export async function checkHealth(deps: HealthDeps): Promise<HealthReport> {
  const { clock } = deps;
  const checks: Record<string, () => Promise<unknown>> = {
    dynamodb: () =>
      deps.dynamo.doc.send(
        new GetCommand({ TableName: requireTable(deps.config, 'apiKeys'), Key: { keyId: 'health-check' } }),
      ),
    escrowKey: () => deps.escrow.check(),
  };
  // Loading a provider's SDK (Square's takes a while) is not the provider being slow: load first, then time.
  const gateways = await Promise.all(deps.gateways.configured().map((kind) => deps.gateways.get(kind)));
  for (const gateway of gateways) checks[gateway.kind] = () => gateway.checkHealth();
  const names = Object.keys(checks);
  const results = await Promise.all(
    names.map((name) =>
      probe(clock, deps.config.healthCheckTimeoutMs, checks[name] as () => Promise<unknown>),
    ),
  );
  const dependencies = Object.fromEntries(
    names.map((name, index) => [name, results[index] as DependencyStatus]),
  );
  return {
    status: results.every((result) => result.status === 'up') ? 'ok' : 'degraded',
    stage: deps.config.stage,
    time: clock.now().toISOString(),
    dependencies,
  };
}

/**
 * Health is public, so a burst of anonymous calls must not become a burst of KMS, Secrets Manager and
 * gateway calls: one report per instance is reused for `ttlMs`, concurrent callers share one check.
 */
export function cachedHealthCheck(deps: HealthDeps, ttlMs = 10_000): () => Promise<HealthReport> {
  let cached: { at: number; report: Promise<HealthReport> } | undefined;
  return () => {
    const now = deps.clock.now().getTime();
    if (!cached || now - cached.at >= ttlMs) {
      const report = checkHealth(deps);
      cached = { at: now, report };
      report.catch(() => (cached = undefined));
    }
    return cached.report;
  };
}
