import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg, platform, release, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runClaimBench } from './claims.js';
import { runColdStartBench } from './coldstart.js';
import { runCostBench } from './cost.js';
import { runCryptoBench } from './crypto.js';
import { runHttpBench } from './http.js';
import { runKeygenBench } from './keygen.js';
import { runSdkBench } from './sdk.js';
import { runWebhookBench } from './webhooks.js';
import { printTargets, type TargetCheck } from './lib/report.js';
import { round } from './lib/stats.js';

/**
 * `npm run bench [-- --quick] [-- --only crypto,keygen,http,coldstart,sdk,cost,webhooks,claims]`: benchmarks,
 * not tests (webhooks and claims run only when named). Each section prints its tables; a summary of targets follows,
 * and everything lands in bench/results/latest.json with a description of the machine. Nothing fails on a number: a target
 * that is not met is reported as such.
 */

const sectionNames = ['crypto', 'keygen', 'http', 'coldstart', 'sdk', 'cost', 'webhooks', 'claims'] as const;
/** Sections that run only when named in --only (they start a whole stack of their own). */
const onDemand: readonly string[] = ['webhooks', 'claims'];
type SectionName = (typeof sectionNames)[number];

interface SectionOutcome {
  seconds: number;
  /** 1-minute load average before and after: the machine is shared, and this says how much. */
  loadAverage: { before: number; after: number };
  result?: unknown;
  error?: string;
}

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
  allowPositionals: false,
});

const quick = values.quick ?? false;
const requested = (values.only ?? sectionNames.filter((name) => !onDemand.includes(name)).join(','))
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
const unknown = requested.filter((name) => !(sectionNames as readonly string[]).includes(name));
if (unknown.length > 0) {
  console.error(`Unknown section(s): ${unknown.join(', ')}. Choose from ${sectionNames.join(', ')}.`);
  process.exit(2);
}
const selected = sectionNames.filter((name) => requested.includes(name));

// Quick keeps every measurement but shortens it; the full run is what docs/PERFORMANCE.md's figures come from.
const settings = {
  crypto: quick
    ? { rounds: 7, slicesPerRound: 2, sliceMs: 20 }
    : { rounds: 21, slicesPerRound: 3, sliceMs: 25 },
  keygen: quick
    ? { samples: 12, loopRounds: 2, keysPerPhase: 6, concurrency: 4 }
    : { samples: 40, loopRounds: 3, keysPerPhase: 8, concurrency: 4 },
  http: quick
    ? {
        connections: 16,
        durationSec: 3,
        users: 80,
        floorRounds: 2,
        floorSliceMs: 500,
        perRequest: { rounds: 3, durationSec: 2 },
      }
    : {
        connections: 16,
        durationSec: 10,
        users: 200,
        floorRounds: 3,
        floorSliceMs: 1000,
        perRequest: { rounds: 9, durationSec: 3 },
      },
  coldstart: { imports: quick ? 3 : 5 },
  sdk: quick ? { rounds: 5, sliceMs: 40 } : { rounds: 15, sliceMs: 60 },
  cost: { operations: quick ? 20 : 100 },
  webhooks: quick
    ? {
        receiptsPerProducer: { single: 20, concurrent: 5 },
        concurrentProducers: 16,
        floorRequests: 50,
        inboxRequests: 50,
      }
    : {
        receiptsPerProducer: { single: 100, concurrent: 20 },
        concurrentProducers: 16,
        floorRequests: 200,
        inboxRequests: 200,
      },
  claims: quick
    ? { populations: [0, 1, 10, 400], rounds: 3, claimsPerRound: 10 }
    : { populations: [0, 1, 10, 400], rounds: 15, claimsPerRound: 20 },
};

const runners: Record<SectionName, () => Promise<{ targets: TargetCheck[] }>> = {
  crypto: () => runCryptoBench(settings.crypto),
  keygen: () => runKeygenBench(settings.keygen),
  http: () => runHttpBench(settings.http),
  coldstart: () => runColdStartBench(settings.coldstart),
  sdk: () => runSdkBench(settings.sdk),
  cost: () => runCostBench(settings.cost),
  webhooks: () => runWebhookBench(settings.webhooks),
  claims: () => runClaimBench(settings.claims),
};

const firstCpu = cpus()[0];
const machine = {
  cpuModel: firstCpu?.model ?? 'unknown',
  cpuSpeedMHz: firstCpu?.speed ?? null,
  logicalCores: cpus().length,
  availableParallelism: availableParallelism(),
  memoryGiB: round(totalmem() / 1024 ** 3, 1),
  platform: `${platform()} ${release()}`,
  node: process.version,
  v8: process.versions.v8,
  openssl: process.versions.openssl,
  date: new Date().toISOString(),
};

console.log(`Receipt service benchmarks${quick ? ' (quick)' : ''}: ${selected.join(', ')}`);
console.log(
  `Machine: ${machine.cpuModel}, ${machine.logicalCores} logical cores, ${machine.memoryGiB} GiB, ${machine.platform}, Node ${machine.node} (OpenSSL ${machine.openssl}); load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`,
);

const sections: Partial<Record<SectionName, SectionOutcome>> = {};
const targets: TargetCheck[] = [];
const started = performance.now();
for (const name of selected) {
  console.log(`\n=== ${name} ===`);
  const before = loadavg()[0] ?? 0;
  const start = performance.now();
  try {
    const result = await runners[name]();
    targets.push(...result.targets);
    sections[name] = {
      seconds: round((performance.now() - start) / 1000, 1),
      loadAverage: { before: round(before, 2), after: round(loadavg()[0] ?? 0, 2) },
      result,
    };
  } catch (error) {
    // One broken section must not hide the others' numbers.
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    console.error(`Section ${name} failed: ${message}`);
    sections[name] = {
      seconds: round((performance.now() - start) / 1000, 1),
      loadAverage: { before: round(before, 2), after: round(loadavg()[0] ?? 0, 2) },
      error: message,
    };
    targets.push({ section: name, target: '(whole section)', measured: 'section failed', met: null });
  }
}

console.log('\n=== summary ===');
printTargets('Targets → measured', targets);
const totalSeconds = round((performance.now() - started) / 1000, 1);
console.log(
  `\nTotal ${totalSeconds} s; load average now ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`,
);

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
await mkdir(resultsDir, { recursive: true });
const output = {
  command: `npm run bench${quick || values.only ? ' --' : ''}${quick ? ' --quick' : ''}${values.only ? ` --only ${selected.join(',')}` : ''}`,
  quick,
  machine,
  settings,
  totalSeconds,
  sections,
  targets,
};
const outputFile = `${resultsDir}latest.json`;
await writeFile(outputFile, `${JSON.stringify(output, null, 2)}\n`);
console.log(`Results: ${outputFile}`);
