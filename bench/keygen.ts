import { generateKeyPairSync } from 'node:crypto';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { generateRsaKeyPair } from '../lib/crypto/keys.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { median, percentile, round, rotated } from './lib/stats.js';

/**
 * RSA-2048 key generation: how long one takes (the service's async generateRsaKeyPair and the
 * generateKeyPairSync it avoids, alternated one for one), and what each does to the event loop that
 * would be serving other requests meanwhile: monitorEventLoopDelay during idle, during concurrent
 * async generation, and during back-to-back sync generation, interleaved in rounds.
 */

export interface KeygenOptions {
  /** Key pairs per flavour for the latency percentiles. */
  samples: number;
  /** Rounds of the idle / async / sync event-loop comparison. */
  loopRounds: number;
  /** Key pairs generated per phase of a loop round. */
  keysPerPhase: number;
  /** In-flight async generations: the libuv pool has 4 threads by default. */
  concurrency: number;
}

type Phase = 'idle' | 'async (concurrent)' | 'sync (back to back)';

interface LoopDelay {
  maxMs: number;
  p99Ms: number;
  p50Ms: number;
  meanMs: number;
}

export interface KeygenResult {
  options: KeygenOptions;
  latencyMs: Record<'async' | 'sync', { p50: number; p99: number; max: number; samples: number }>;
  /** Medians over rounds of each phase's event-loop delay statistics. */
  eventLoopDelay: Record<Phase, LoopDelay & { keysPerSecond: number | null }>;
  targets: TargetCheck[];
}

function generateSync(): { publicKey: string; privateKey: string } {
  // The same job as generateRsaKeyPair: DER encodings, returned as base64.
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
  });
  return { publicKey: pair.publicKey.toString('base64'), privateKey: pair.privateKey.toString('base64') };
}

const NS_PER_MS = 1e6;

/** Runs `work` with an event-loop delay histogram at 1 ms resolution around it. */
async function withLoopMonitor(work: () => Promise<void>): Promise<LoopDelay & { elapsedMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const start = performance.now();
  await work();
  const elapsedMs = performance.now() - start;
  histogram.disable();
  return {
    maxMs: histogram.max / NS_PER_MS,
    p99Ms: histogram.percentile(99) / NS_PER_MS,
    p50Ms: histogram.percentile(50) / NS_PER_MS,
    meanMs: histogram.mean / NS_PER_MS,
    elapsedMs,
  };
}

async function asyncConcurrent(keys: number, concurrency: number): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < keys) {
      started++;
      await generateRsaKeyPair();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

async function syncBackToBack(keys: number): Promise<void> {
  for (let i = 0; i < keys; i++) {
    generateSync();
    // Yield once per key, as a request handler would between requests; the loop is still blocked for a whole key.
    await nextTurn();
  }
}

export async function runKeygenBench(options: KeygenOptions): Promise<KeygenResult> {
  // Warm-up: the first generation pays for loading OpenSSL's RSA code paths.
  await generateRsaKeyPair();
  generateSync();

  const latencies = { async: [] as number[], sync: [] as number[] };
  for (let i = 0; i < options.samples; i++) {
    // Alternated one for one, so both flavours see the same background load.
    const order: ('async' | 'sync')[] = i % 2 === 0 ? ['async', 'sync'] : ['sync', 'async'];
    for (const flavour of order) {
      const start = performance.now();
      if (flavour === 'async') await generateRsaKeyPair();
      else generateSync();
      latencies[flavour].push(performance.now() - start);
    }
  }

  const phases: Phase[] = ['idle', 'async (concurrent)', 'sync (back to back)'];
  const observed = new Map<Phase, (LoopDelay & { keysPerSecond: number | null })[]>(
    phases.map((phase) => [phase, []]),
  );
  let idleMs = 1000;
  for (let roundIndex = 0; roundIndex < options.loopRounds; roundIndex++) {
    for (const phase of rotated(phases, roundIndex)) {
      const delay = await withLoopMonitor(async () => {
        if (phase === 'idle') await sleep(idleMs);
        else if (phase === 'async (concurrent)')
          await asyncConcurrent(options.keysPerPhase, options.concurrency);
        else await syncBackToBack(options.keysPerPhase);
      });
      // Idle lasts as long as the last busy phase, so the histograms hold comparable numbers of samples.
      if (phase !== 'idle') idleMs = Math.max(500, Math.min(5000, delay.elapsedMs));
      observed.get(phase)?.push({
        maxMs: delay.maxMs,
        p99Ms: delay.p99Ms,
        p50Ms: delay.p50Ms,
        meanMs: delay.meanMs,
        keysPerSecond: phase === 'idle' ? null : (options.keysPerPhase / delay.elapsedMs) * 1000,
      });
    }
  }

  const summarise = (values: number[]) => ({
    p50: round(percentile(values, 50), 1),
    p99: round(percentile(values, 99), 1),
    max: round(Math.max(...values), 1),
    samples: values.length,
  });
  const latencyMs = { async: summarise(latencies.async), sync: summarise(latencies.sync) };
  const eventLoopDelay = {} as KeygenResult['eventLoopDelay'];
  for (const phase of phases) {
    const runs = observed.get(phase) ?? [];
    const pick = (select: (run: LoopDelay) => number) => round(median(runs.map(select)), 2);
    const rates = runs.map((run) => run.keysPerSecond).filter((rate): rate is number => rate !== null);
    eventLoopDelay[phase] = {
      maxMs: pick((run) => run.maxMs),
      p99Ms: pick((run) => run.p99Ms),
      p50Ms: pick((run) => run.p50Ms),
      meanMs: pick((run) => run.meanMs),
      keysPerSecond: rates.length > 0 ? round(median(rates), 1) : null,
    };
  }

  printTable(
    `Key generation latency, RSA-2048, ${options.samples} of each, alternated (ms)`,
    ['flavour', 'p50', 'p99', 'max'],
    (['async', 'sync'] as const).map((flavour) => [
      flavour === 'async' ? 'generateRsaKeyPair (libuv pool)' : 'generateKeyPairSync (baseline)',
      latencyMs[flavour].p50,
      latencyMs[flavour].p99,
      latencyMs[flavour].max,
    ]),
  );
  printTable(
    `Event-loop delay while generating (${options.keysPerPhase} keys per phase, async ${options.concurrency} in flight; median of ${options.loopRounds} rounds; ms)`,
    ['phase', 'max', 'p99', 'p50', 'mean', 'keys/s'],
    phases.map((phase) => {
      const entry = eventLoopDelay[phase];
      return [
        phase,
        entry.maxMs,
        entry.p99Ms,
        entry.p50Ms,
        entry.meanMs,
        entry.keysPerSecond === null ? '-' : entry.keysPerSecond,
      ];
    }),
  );

  const idle = eventLoopDelay.idle;
  const concurrent = eventLoopDelay['async (concurrent)'];
  const blocking = eventLoopDelay['sync (back to back)'];
  const targets: TargetCheck[] = [
    {
      section: 'keygen',
      target: 'event-loop delay while generating: async (pool) vs idle vs generateKeyPairSync',
      measured: `loop-delay p99 ${concurrent.p99Ms} ms async vs ${idle.p99Ms} ms idle vs ${blocking.p99Ms} ms sync; max ${concurrent.maxMs} / ${idle.maxMs} / ${blocking.maxMs} ms`,
      met: null,
      informational: true,
      note: `key latency p50/p99: async ${latencyMs.async.p50}/${latencyMs.async.p99} ms, sync ${latencyMs.sync.p50}/${latencyMs.sync.p99} ms`,
    },
  ];
  return { options, latencyMs, eventLoopDelay, targets };
}
