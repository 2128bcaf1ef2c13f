import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import autocannon, { type AutocannonRequest, type Result } from 'autocannon';
import {
  RECEIPT_ID_PLACEHOLDER,
  TRANSACTION_ID_PLACEHOLDER,
  type LatencySummary,
  type LoadOutcome,
  type LoadSpec,
} from './lib/load-spec.js';
import { mean, percentile, round } from './lib/stats.js';

/**
 * The load generator, in its own process so that autocannon's work does not run on the event loop
 * of the service it is measuring (the local stack is in the parent). Reads a LoadSpec file, writes
 * a LoadOutcome file. Usage: tsx bench/http-load.ts <spec.json> <outcome.json>
 */

function summarise(values: number[]): LatencySummary {
  return {
    count: values.length,
    p50: round(percentile(values, 50), 2),
    p90: round(percentile(values, 90), 2),
    p99: round(percentile(values, 99), 2),
    max: round(values.length ? Math.max(...values) : Number.NaN, 2),
    mean: round(mean(values), 2),
  };
}

async function main(specPath: string | undefined, outcomePath: string | undefined): Promise<void> {
  if (!specPath || !outcomePath) throw new Error('usage: http-load <spec.json> <outcome.json>');
  const spec = JSON.parse(await readFile(specPath, 'utf8')) as LoadSpec;
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(spec.url))
    throw new Error(`refusing a non-loopback target: ${spec.url}`);
  if (spec.bodies.length === 0) throw new Error('no request bodies');
  if (spec.paths && spec.paths.length !== spec.bodies.length) throw new Error('one path per body');

  let next = 0;
  const setupRequest = (request: AutocannonRequest): AutocannonRequest => {
    const index = next++ % spec.bodies.length;
    const template = spec.bodies[index] as string;
    const path = spec.paths?.[index] ?? spec.path;
    // Unique ids per request: the receipt and payment endpoints are idempotent per receiptId/transactionId.
    const body = template.includes(RECEIPT_ID_PLACEHOLDER)
      ? template
          .replaceAll(RECEIPT_ID_PLACEHOLDER, randomUUID())
          .replaceAll(TRANSACTION_ID_PLACEHOLDER, randomUUID())
      : template;
    return { ...request, path, body };
  };

  const all: number[] = [];
  const ok: number[] = [];
  let firstErrorBody: string | null = null;
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: spec.durationSec,
    ...(spec.maxRequests ? { maxOverallRequests: spec.maxRequests } : {}),
    timeout: spec.timeoutSec,
    requests: [
      {
        method: 'POST',
        path: spec.path,
        headers: { 'content-type': 'application/json', 'x-api-key': spec.apiKey },
        setupRequest,
        onResponse: (status: number, body: string) => {
          if ((status < 200 || status >= 300) && firstErrorBody === null) {
            firstErrorBody = `HTTP ${status}: ${body.slice(0, 300)}`;
          }
        },
      },
    ],
  });
  // autocannon's own histogram holds whole milliseconds; these keep the fractions.
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => {
    all.push(ms);
    if (statusCode >= 200 && statusCode < 300) ok.push(ms);
  });
  const cpuBefore = process.cpuUsage();
  const result = await new Promise<Result>((resolve) => instance.on('done', resolve));
  const cpu = process.cpuUsage(cpuBefore);
  const statusCodes = Object.fromEntries(
    Object.entries(result.statusCodeStats).map(([code, stats]) => [code, stats.count]),
  );
  const outcome: LoadOutcome = {
    requests: all.length,
    sent: result.requests.sent ?? all.length,
    durationSec: result.duration,
    requestsPerSecond: round(all.length / result.duration, 1),
    latencyMs: summarise(all),
    okLatencyMs: summarise(ok),
    non2xx: result.non2xx,
    statusCodes,
    errors: result.errors,
    timeouts: result.timeouts,
    firstErrorBody,
    cpuMs: round((cpu.user + cpu.system) / 1000, 1),
  };
  await writeFile(outcomePath, JSON.stringify(outcome));
}

main(process.argv[2], process.argv[3]).catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
