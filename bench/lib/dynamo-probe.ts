import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import {
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableKey } from '../../lib/kernel/tables.js';
import { median, percentile, round, rotated } from './stats.js';

/**
 * What the service's DynamoDB calls cost on their own: a counter on the document client (which
 * shares its middleware stack with the raw client, so Powertools' idempotency calls are counted too)
 * and a floor measured with that same client at the same concurrency as the HTTP runs.
 */

export type CallKind = 'read' | 'put' | 'update' | 'transact';
export const callKinds: readonly CallKind[] = ['read', 'put', 'update', 'transact'];

/** Command names as the SDK reports them (GetItemCommand, GetCommand, TransactWriteItemsCommand...). */
export function kindOf(commandName: string): CallKind {
  if (/TransactWrite/.test(commandName)) return 'transact';
  if (/^(Get|BatchGet|Query|Scan)/.test(commandName)) return 'read';
  if (/^Update/.test(commandName)) return 'update';
  return 'put';
}

/** The tables a call names: one for most commands, several for transactions and batches. */
function tablesOf(input: unknown): string[] {
  if (typeof input !== 'object' || input === null) return [];
  const record = input as Record<string, unknown>;
  if (typeof record.TableName === 'string') return [record.TableName];
  if (typeof record.RequestItems === 'object' && record.RequestItems !== null)
    return Object.keys(record.RequestItems);
  if (Array.isArray(record.TransactItems)) {
    const names = new Set<string>();
    for (const item of record.TransactItems as Record<string, { TableName?: string }>[])
      for (const operation of Object.values(item)) if (operation.TableName) names.add(operation.TableName);
    return [...names];
  }
  return [];
}

export class DynamoCallCounter {
  private counts = new Map<string, number>();
  /** `Command table+table` → count: which table each call went to, so a difference can be named. */
  private targets = new Map<string, number>();
  private durations: Record<CallKind, number> = { read: 0, put: 0, update: 0, transact: 0 };
  private inflight = 0;
  private lastActivity = performance.now();

  /**
   * Added at the initialize step: once per logical call, and its duration includes the SDK's own work
   * (marshalling, signing, retries), which is what a call costs the handler that awaits it.
   */
  constructor(
    doc: DynamoDBDocumentClient,
    /** Physical table name → its key in tableDefinitions, so targets read `UpdateCommand rateLimits`. */
    private readonly tableKeys: ReadonlyMap<string, string> = new Map(),
  ) {
    doc.middlewareStack.add(
      (next, context) => async (args) => {
        const name = context.commandName ?? 'unknown';
        this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
        const target = `${name} ${
          tablesOf(args.input)
            .map((table) => this.tableKeys.get(table) ?? table)
            .join('+') || '?'
        }`;
        this.targets.set(target, (this.targets.get(target) ?? 0) + 1);
        this.inflight++;
        const start = performance.now();
        try {
          return await next(args);
        } finally {
          const end = performance.now();
          this.durations[kindOf(name)] += end - start;
          this.inflight--;
          this.lastActivity = end;
        }
      },
      { step: 'initialize', name: 'benchDynamoCallCounter' },
    );
  }

  reset(): void {
    this.counts = new Map();
    this.targets = new Map();
    this.durations = { read: 0, put: 0, update: 0, transact: 0 };
  }

  byCommand(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Calls by command and table (`GetCommand users`), since the last reset. */
  byTarget(): Record<string, number> {
    return Object.fromEntries([...this.targets].sort(([a], [b]) => a.localeCompare(b)));
  }

  byKind(): Record<CallKind, number> {
    const totals: Record<CallKind, number> = { read: 0, put: 0, update: 0, transact: 0 };
    for (const [name, count] of this.counts) totals[kindOf(name)] += count;
    return totals;
  }

  /** Total milliseconds spent awaiting DynamoDB, by kind, since the last reset. */
  millisByKind(): Record<CallKind, number> {
    return { ...this.durations };
  }

  /**
   * Waits until no call has been in flight for `quietMs`: requests the load generator abandoned at
   * its deadline are still running in the service, and their calls belong to this run's counts.
   */
  async quiesce(quietMs: number, maxMs: number): Promise<void> {
    const deadline = performance.now() + maxMs;
    while (performance.now() < deadline) {
      if (this.inflight === 0 && performance.now() - this.lastActivity >= quietMs) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

export interface FloorStats {
  calls: number;
  p50Ms: number;
  p99Ms: number;
}

/** 16 (or `concurrency`) closed loops of one call kind, interleaved with the other kinds in rounds. */
export async function measureDynamoFloor(
  doc: DynamoDBDocumentClient,
  tableNames: Partial<Record<TableKey, string>>,
  readKey: Record<string, string>,
  options: { concurrency: number; rounds: number; sliceMs: number },
): Promise<Record<CallKind, FloorStats>> {
  const table = (key: TableKey): string => {
    const name = tableNames[key];
    if (!name) throw new Error(`DynamoDB floor: the ${key} table is not configured`);
    return name;
  };
  const tables = {
    users: table('users'),
    audit: table('audit'),
    rateLimits: table('rateLimits'),
    accessTokens: table('accessTokens'),
  };
  const hotCounter = `bench-floor#${randomUUID()}`;
  const calls: Record<CallKind, () => Promise<unknown>> = {
    // The shapes mirror the service's: consistent reads, conditional puts, the limiter's ADD on one hot item.
    read: () => doc.send(new GetCommand({ TableName: tables.users, Key: readKey, ConsistentRead: true })),
    put: () =>
      doc.send(
        new PutCommand({
          TableName: tables.audit,
          Item: {
            pk: 'CLIENT#bench-floor',
            sk: `${new Date().toISOString()}#${randomUUID()}`,
            action: 'receipt.encrypt',
            outcome: 'success',
            requestId: randomUUID(),
            clientId: 'bench-floor',
            receiptId: randomUUID(),
            ttl: Math.floor(Date.now() / 1000) + 3600,
          },
        }),
      ),
    update: () =>
      doc.send(
        new UpdateCommand({
          TableName: tables.rateLimits,
          Key: { pk: hotCounter },
          UpdateExpression: 'ADD #count :one SET #ttl = if_not_exists(#ttl, :ttl)',
          ExpressionAttributeNames: { '#count': 'count', '#ttl': 'ttl' },
          ExpressionAttributeValues: { ':one': 1, ':ttl': Math.floor(Date.now() / 1000) + 3600 },
          ReturnValues: 'UPDATED_NEW',
        }),
      ),
    transact: () => {
      const ttl = Math.floor(Date.now() / 1000) + 3600;
      return doc.send(
        new TransactWriteCommand({
          TransactItems: [0, 1].map((index) => ({
            Put: {
              TableName: tables.accessTokens,
              Item: { pk: `BENCH#${randomUUID()}`, slot: index, ttl },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          })),
        }),
      );
    },
  };
  const latencies: Record<CallKind, number[]> = { read: [], put: [], update: [], transact: [] };
  // Warm the connection pool and DynamoDB Local's JIT before anything is recorded.
  for (const kind of callKinds)
    await Promise.all(Array.from({ length: options.concurrency }, () => calls[kind]()));
  for (let roundIndex = 0; roundIndex < options.rounds; roundIndex++) {
    for (const kind of rotated(callKinds, roundIndex)) {
      const deadline = performance.now() + options.sliceMs;
      const loop = async () => {
        while (performance.now() < deadline) {
          const start = performance.now();
          await calls[kind]();
          latencies[kind].push(performance.now() - start);
        }
      };
      await Promise.all(Array.from({ length: options.concurrency }, loop));
    }
  }
  const stats = {} as Record<CallKind, FloorStats>;
  for (const kind of callKinds) {
    stats[kind] = {
      calls: latencies[kind].length,
      p50Ms: round(median(latencies[kind]), 2),
      p99Ms: round(percentile(latencies[kind], 99), 2),
    };
  }
  return stats;
}

/** Linux only: the pid of DynamoDB Local, a java child of this process, to read its CPU time. */
export function javaChildPid(): number | null {
  try {
    for (const task of readdirSync(`/proc/${process.pid}/task`)) {
      const children = readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8').trim().split(/\s+/);
      for (const child of children) {
        if (child && readFileSync(`/proc/${child}/comm`, 'utf8').trim() === 'java') return Number(child);
      }
    }
  } catch {
    // Not Linux, or /proc is not readable: CPU attribution is then left out.
  }
  return null;
}

/** User + system CPU milliseconds of a process, from /proc/<pid>/stat (clock ticks of 10 ms). */
export function processCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces; fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : null;
  } catch {
    return null;
  }
}
