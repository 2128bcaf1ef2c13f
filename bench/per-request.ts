import { performance } from 'node:perf_hooks';
import type { DynamoCallCounter } from './lib/dynamo-probe.js';
import type { LoadOutcome } from './lib/load-spec.js';
import { printTable, type TargetCheck } from './lib/report.js';
import { runLoad } from './lib/setup.js';
import { median, round, rotated } from './lib/stats.js';

/**
 * What a Lambda deployment pays per request, each figure against a floor measured in the same run:
 * one connection (one request per instance, nothing queued behind it), the service and the bare
 * handler of bench/floor.ts taking turns in rounds. CPU is this process's own (process.cpuUsage):
 * the service and the floor both run here, one at a time, while DynamoDB Local, the gateway sandbox
 * and the load generator are other processes and are left out.
 */

/** Every endpoint with a CPU-per-request target against a floor of its own (bench/floor.ts). */
export const comparedEndpoints = [
  'receipts/encrypt',
  'receipts/decrypt',
  'keys/grant-access',
  'payments/gateway_a/create',
  'payments/gateway_a/refund',
  'receipts/claim',
] as const;
export type ComparedEndpoint = (typeof comparedEndpoints)[number];

export const CPU_RATIO_TARGET = 1.2;
export const P99_TARGET_MS = 10;

export interface PerRequestOptions {
  rounds: number;
  /** Per run; each round has one service run and one floor run per endpoint. */
  durationSec: number;
}

export interface Side {
  url: string;
  /** On the side's own DynamoDB client: says when its calls have settled, and how many there were. */
  counter: DynamoCallCounter;
  /**
   * CPU microseconds so far of work this side does that a deployed function does not: the local
   * adapter standing in for API Gateway. Measured, and charged to neither side.
   */
  notChargedCpuMicros?: () => number;
}

export type SideName = 'service' | 'floor';

/** One run's requests, each needing state of its own: sent once each, then the run ends. */
export interface PreparedRun {
  bodies: unknown[];
  /** One per body (a refund names its payment in the path); the plan's path otherwise. */
  paths?: string[];
}

export interface EndpointPlan {
  name: ComparedEndpoint;
  path: string;
  apiKey: string;
  /**
   * Called before each round; bodies the load generator sends round-robin (placeholders allowed).
   * Either this or prepareRun.
   */
  bodiesForRound?(round: number): Promise<unknown[]>;
  /**
   * For endpoints a request can be made once against (a refund takes what is left of a payment, a
   * claim releases its receipt): called before each run of each side, untimed, with about as many
   * requests as the run will send (from the warm-up's pace), so every side and round starts from
   * state of its own made the same way.
   */
  prepareRun?(side: SideName, round: number, requests: number): Promise<PreparedRun>;
  /** Called once before the warm-up, untimed, for the warm-up's own state (`requests` of them). */
  prepareWarmUp?(requests: number): Promise<void>;
  /** What is measured, when a choice was made (printed with the results). */
  note?: string;
  /** Called before every run, service or floor (grant-access frees every token slot here). */
  beforeRun?(): void;
  warmUp(side: Side): Promise<void>;
  maxRequests?: number;
  /**
   * Why a service request makes a call the floor does not, by `Command table` (DynamoCallCounter's
   * byTarget): printed beside the measured difference, so every extra call is named.
   */
  explainCall?(target: string): string | undefined;
}

interface RunMeasure {
  requests: number;
  non2xx: number;
  cpuMsPerRequest: number;
  /** Left out of cpuMsPerRequest: the local adapter's routing, event building and response writing. */
  adapterCpuMsPerRequest: number;
  p50Ms: number;
  p99Ms: number;
  dynamoCallsPerRequest: number;
  /** Calls by `Command table` over the run (not per request), and the requests sent. */
  callsByTarget: Record<string, number>;
  sent: number;
}

interface SideSummary {
  /** Medians over the rounds. */
  cpuMsPerRequest: number;
  adapterCpuMsPerRequest: number;
  p50Ms: number;
  p99Ms: number;
  dynamoCallsPerRequest: number;
  /** One warm request's DynamoDB calls by SDK command name. */
  callsSingleRequest: Record<string, number>;
  requests: number;
  non2xx: number;
  /** Calls per request by `Command table`, over every round. */
  callsPerRequestByTarget: Record<string, number>;
}

/** A call the service makes more (or less) often per request than the floor, and why. */
export interface CallDifference {
  target: string;
  perRequest: number;
  why: string;
}

export interface ComparedResult {
  path: string;
  note?: string;
  rounds: { service: RunMeasure; floor: RunMeasure; cpuRatio: number }[];
  service: SideSummary;
  floor: SideSummary;
  /** Median of the per-round ratios (service ÷ floor), so a slow moment of the VM cancels out. */
  cpuRatio: number;
  p99Ratio: number;
  /** Every call whose rate differs between the sides by at least 0.01 per request. */
  callDifferences: CallDifference[];
}

export interface PerRequestResult {
  options: PerRequestOptions;
  endpoints: Partial<Record<ComparedEndpoint, ComparedResult>>;
  targets: TargetCheck[];
}

async function measureRun(
  side: Side,
  plan: EndpointPlan,
  requests: PreparedRun & { maxRequests?: number },
  options: PerRequestOptions,
  workDir: string,
): Promise<RunMeasure> {
  plan.beforeRun?.();
  // Preparing a run goes through the service: its calls settle before anything is counted.
  await side.counter.quiesce(100, 5_000);
  side.counter.reset();
  const adapterBefore = side.notChargedCpuMicros?.() ?? 0;
  const before = process.cpuUsage();
  const load: LoadOutcome = await runLoad(
    {
      url: side.url,
      path: plan.path,
      apiKey: plan.apiKey,
      connections: 1,
      durationSec: options.durationSec,
      ...(requests.maxRequests ? { maxRequests: requests.maxRequests } : {}),
      bodies: requests.bodies.map((body) => JSON.stringify(body)),
      ...(requests.paths ? { paths: requests.paths } : {}),
      timeoutSec: 30,
    },
    workDir,
  );
  // A request abandoned at the deadline still runs to its end, and its CPU belongs to this run.
  await side.counter.quiesce(300, 10_000);
  const cpu = process.cpuUsage(before);
  const adapter = (side.notChargedCpuMicros?.() ?? 0) - adapterBefore;
  const sent = Math.max(1, load.sent);
  const calls = Object.values(side.counter.byKind()).reduce((sum, count) => sum + count, 0);
  return {
    requests: load.requests,
    non2xx: load.non2xx + load.errors + load.timeouts,
    cpuMsPerRequest: round((cpu.user + cpu.system - adapter) / 1000 / sent, 3),
    adapterCpuMsPerRequest: round(adapter / 1000 / sent, 3),
    p50Ms: load.latencyMs.p50,
    p99Ms: load.latencyMs.p99,
    dynamoCallsPerRequest: round(calls / sent, 2),
    callsByTarget: side.counter.byTarget(),
    sent,
  };
}

async function callsOfOneRequest(side: Side, plan: EndpointPlan): Promise<Record<string, number>> {
  side.counter.reset();
  await plan.warmUp(side);
  await side.counter.quiesce(100, 5_000);
  return side.counter.byCommand();
}

function summarise(runs: RunMeasure[], callsSingleRequest: Record<string, number>): SideSummary {
  return {
    cpuMsPerRequest: round(median(runs.map((run) => run.cpuMsPerRequest)), 3),
    adapterCpuMsPerRequest: round(median(runs.map((run) => run.adapterCpuMsPerRequest)), 3),
    p50Ms: round(median(runs.map((run) => run.p50Ms)), 2),
    p99Ms: round(median(runs.map((run) => run.p99Ms)), 2),
    dynamoCallsPerRequest: round(median(runs.map((run) => run.dynamoCallsPerRequest)), 2),
    callsSingleRequest,
    requests: runs.reduce((sum, run) => sum + run.requests, 0),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
    callsPerRequestByTarget: perRequestByTarget(runs),
  };
}

function perRequestByTarget(runs: readonly RunMeasure[]): Record<string, number> {
  const sent = runs.reduce((sum, run) => sum + run.sent, 0);
  const totals = new Map<string, number>();
  for (const run of runs)
    for (const [target, count] of Object.entries(run.callsByTarget))
      totals.set(target, (totals.get(target) ?? 0) + count);
  return Object.fromEntries([...totals].map(([target, count]) => [target, count / Math.max(1, sent)]));
}

function callDifferences(plan: EndpointPlan, service: SideSummary, floor: SideSummary): CallDifference[] {
  const targets = new Set([
    ...Object.keys(service.callsPerRequestByTarget),
    ...Object.keys(floor.callsPerRequestByTarget),
  ]);
  const differences: CallDifference[] = [];
  for (const target of [...targets].sort()) {
    const difference =
      (service.callsPerRequestByTarget[target] ?? 0) - (floor.callsPerRequestByTarget[target] ?? 0);
    if (Math.abs(difference) < 0.01) continue;
    differences.push({
      target,
      perRequest: round(difference, 3),
      why: plan.explainCall?.(target) ?? 'UNEXPLAINED: a call one side makes and the other does not',
    });
  }
  return differences;
}

export async function comparePerRequest(
  sides: { service: Side; floor: Side },
  plans: EndpointPlan[],
  options: PerRequestOptions,
  workDir: string,
): Promise<PerRequestResult> {
  const endpoints: Partial<Record<ComparedEndpoint, ComparedResult>> = {};
  for (const plan of plans) {
    // Warm-up (JIT, connection pools, the payment SDK's lazy load), then one counted request per side.
    const warmUps = 3;
    await plan.prepareWarmUp?.(2 * warmUps + 2);
    let warmMs = 0;
    for (let i = 0; i < warmUps; i++) {
      // The last pair is warm: its pace sizes the runs that need state prepared for them.
      const start = performance.now();
      await plan.warmUp(sides.service);
      await plan.warmUp(sides.floor);
      warmMs = (performance.now() - start) / 2;
    }
    const single = {
      service: await callsOfOneRequest(sides.service, plan),
      floor: await callsOfOneRequest(sides.floor, plan),
    };
    // Room for the faster side to keep sending for the whole run; one that runs out ends early.
    const perRun = Math.ceil(((options.durationSec * 1000) / Math.max(1, warmMs)) * 2);
    const rounds: ComparedResult['rounds'] = [];
    for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
      const shared = plan.bodiesForRound ? { bodies: await plan.bodiesForRound(roundIndex) } : undefined;
      const measured: Partial<Record<SideName, RunMeasure>> = {};
      for (const name of rotated(['service', 'floor'] as const, roundIndex)) {
        const prepared = shared ?? (await plan.prepareRun?.(name, roundIndex, perRun));
        if (!prepared) throw new Error(`${plan.name}: neither bodiesForRound nor prepareRun`);
        const maxRequests = shared ? plan.maxRequests : prepared.bodies.length;
        measured[name] = await measureRun(
          sides[name],
          plan,
          { ...prepared, ...(maxRequests ? { maxRequests } : {}) },
          options,
          workDir,
        );
      }
      const service = measured.service as RunMeasure;
      const floor = measured.floor as RunMeasure;
      rounds.push({ service, floor, cpuRatio: round(service.cpuMsPerRequest / floor.cpuMsPerRequest, 3) });
    }
    const service = summarise(
      rounds.map((entry) => entry.service),
      single.service,
    );
    const floor = summarise(
      rounds.map((entry) => entry.floor),
      single.floor,
    );
    endpoints[plan.name] = {
      path: plan.path,
      ...(plan.note ? { note: plan.note } : {}),
      rounds,
      service,
      floor,
      cpuRatio: round(median(rounds.map((entry) => entry.cpuRatio)), 2),
      p99Ratio: round(service.p99Ms / floor.p99Ms, 2),
      callDifferences: callDifferences(plan, service, floor),
    };
    console.log(
      `  ${plan.name} @1 connection: ${service.requests} service / ${floor.requests} floor requests over ${options.rounds} rounds, ${service.non2xx + floor.non2xx} non-2xx`,
    );
  }
  printPerRequest(endpoints, options);
  return { options, endpoints, targets: perRequestTargets(endpoints, options) };
}

function printPerRequest(
  endpoints: Partial<Record<ComparedEndpoint, ComparedResult>>,
  options: PerRequestOptions,
): void {
  const rows = Object.entries(endpoints) as [ComparedEndpoint, ComparedResult][];
  printTable(
    `Per request at one connection (a Lambda instance's view): service vs bare handler (bench/floor.ts), ` +
      `${options.rounds} interleaved rounds of ${options.durationSec} s each; medians over rounds; ` +
      'CPU = ms of this process (service or floor), DynamoDB Local, sandbox and load generator excluded; ' +
      "the local adapter's own work (routing, API Gateway event, response; not done in AWS) is measured and left out",
    [
      'endpoint',
      'CPU service',
      'CPU floor',
      'CPU ratio',
      'adapter (left out)',
      'p50 service',
      'p50 floor',
      'p99 service',
      'p99 floor',
      'p99 ratio',
      'DDB calls s/f',
      'non-2xx',
    ],
    rows.map(([name, result]) => [
      name,
      result.service.cpuMsPerRequest,
      result.floor.cpuMsPerRequest,
      result.cpuRatio,
      result.service.adapterCpuMsPerRequest,
      result.service.p50Ms,
      result.floor.p50Ms,
      result.service.p99Ms,
      result.floor.p99Ms,
      result.p99Ratio,
      `${result.service.dynamoCallsPerRequest}/${result.floor.dynamoCallsPerRequest}`,
      result.service.non2xx + result.floor.non2xx,
    ]),
  );
  for (const [name, result] of rows) {
    const calls = (record: Record<string, number>) =>
      Object.entries(record)
        .map(([command, count]) => `${command}×${count}`)
        .join(', ');
    if (result.note) console.log(`  ${name}: ${result.note}`);
    console.log(
      `  ${name}: one warm request — service ${calls(result.service.callsSingleRequest)}; floor ${calls(result.floor.callsSingleRequest)}; ` +
        `CPU ratio by round ${result.rounds.map((entry) => entry.cpuRatio).join(', ')}`,
    );
    for (const difference of result.callDifferences)
      console.log(
        `    ${difference.perRequest > 0 ? '+' : ''}${difference.perRequest}/request ${difference.target}: ${difference.why}`,
      );
  }
}

function perRequestTargets(
  endpoints: Partial<Record<ComparedEndpoint, ComparedResult>>,
  options: PerRequestOptions,
): TargetCheck[] {
  const valid = (result: ComparedResult) => result.service.non2xx === 0 && result.floor.non2xx === 0;
  const encrypt = endpoints['receipts/encrypt'];
  return [
    ...comparedEndpoints.map((name): TargetCheck => {
      const result = endpoints[name];
      return {
        section: 'http',
        target: `${name} CPU per request ≤ ${CPU_RATIO_TARGET}× its floor (1 connection)`,
        measured: result
          ? `${result.cpuRatio}× (${result.service.cpuMsPerRequest} vs ${result.floor.cpuMsPerRequest} ms CPU/request; median of ${options.rounds} interleaved rounds; DDB calls ${result.service.dynamoCallsPerRequest}/${result.floor.dynamoCallsPerRequest})`
          : 'not run',
        met: result ? valid(result) && result.cpuRatio <= CPU_RATIO_TARGET : null,
      };
    }),
    {
      section: 'http',
      target: `encrypt p99 < ${P99_TARGET_MS} ms at 1 connection (local stack)`,
      measured: encrypt
        ? `p99 ${encrypt.service.p99Ms} ms, p50 ${encrypt.service.p50Ms} ms; bare handler p99 ${encrypt.floor.p99Ms} ms (${encrypt.p99Ratio}×)`
        : 'not run',
      met: encrypt ? valid(encrypt) && encrypt.service.p99Ms < P99_TARGET_MS : null,
    },
  ];
}
