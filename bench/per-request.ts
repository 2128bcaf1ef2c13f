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

/**
 * Every endpoint with a CPU-per-request target against a floor of its own. The last two come from
 * other branches: when their routes land, bench/floor.ts gains a handler for each (see its
 * `pendingFloors`) and bench/http.ts an EndpointPlan; until then they are reported as not measured.
 */
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

export interface EndpointPlan {
  name: ComparedEndpoint;
  path: string;
  apiKey: string;
  /** Called before each round; bodies the load generator sends round-robin (placeholders allowed). */
  bodiesForRound(round: number): Promise<unknown[]>;
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
  bodies: unknown[],
  options: PerRequestOptions,
  workDir: string,
): Promise<RunMeasure> {
  plan.beforeRun?.();
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
      ...(plan.maxRequests ? { maxRequests: plan.maxRequests } : {}),
      bodies: bodies.map((body) => JSON.stringify(body)),
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
    for (let i = 0; i < 3; i++) {
      await plan.warmUp(sides.service);
      await plan.warmUp(sides.floor);
    }
    const single = {
      service: await callsOfOneRequest(sides.service, plan),
      floor: await callsOfOneRequest(sides.floor, plan),
    };
    const rounds: ComparedResult['rounds'] = [];
    for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
      const bodies = await plan.bodiesForRound(roundIndex);
      const measured: Partial<Record<'service' | 'floor', RunMeasure>> = {};
      for (const name of rotated(['service', 'floor'] as const, roundIndex)) {
        measured[name] = await measureRun(sides[name], plan, bodies, options, workDir);
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

/** What the endpoints of other branches need before they can be measured (see bench/floor.ts). */
const pendingNotes: Partial<Record<ComparedEndpoint, string>> = {
  'payments/gateway_a/refund': 'needs the refunds route (issue 21) and its floor in bench/floor.ts',
  'receipts/claim': 'needs the evidence-index claims (issue 20) and its floor in bench/floor.ts',
};

function perRequestTargets(
  endpoints: Partial<Record<ComparedEndpoint, ComparedResult>>,
  options: PerRequestOptions,
): TargetCheck[] {
  const valid = (result: ComparedResult) => result.service.non2xx === 0 && result.floor.non2xx === 0;
  const encrypt = endpoints['receipts/encrypt'];
  return [
    ...comparedEndpoints.map((name): TargetCheck => {
      const result = endpoints[name];
      const pending = pendingNotes[name];
      return {
        section: 'http',
        target: `${name} CPU per request ≤ ${CPU_RATIO_TARGET}× its floor (1 connection)`,
        measured: result
          ? `${result.cpuRatio}× (${result.service.cpuMsPerRequest} vs ${result.floor.cpuMsPerRequest} ms CPU/request; median of ${options.rounds} interleaved rounds; DDB calls ${result.service.dynamoCallsPerRequest}/${result.floor.dynamoCallsPerRequest})`
          : 'not run',
        met: result ? valid(result) && result.cpuRatio <= CPU_RATIO_TARGET : null,
        ...(!result && pending ? { note: `${name}: ${pending}` } : {}),
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
