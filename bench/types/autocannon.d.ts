/**
 * The slice of autocannon 9's programmatic API the bench uses (the package ships no types and
 * @types/autocannon is not a dependency). Shapes follow autocannon's README and lib/run.js.
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface AutocannonRequest {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }

  export interface RequestTemplate extends AutocannonRequest {
    /** Called before each request is sent; the returned request is what goes on the wire. */
    setupRequest?: (request: AutocannonRequest, context: Record<string, unknown>) => AutocannonRequest;
    /** Called with each response's status and body (collecting bodies costs a little). */
    onResponse?: (
      status: number,
      body: string,
      context: Record<string, unknown>,
      headers: Record<string, string>,
    ) => void;
  }

  export interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    /** Seconds. */
    duration?: number;
    /** Requests in all; overrides duration. */
    amount?: number;
    /** Requests in all, shared out over the connections; the run ends at this or at `duration`, whichever is first. */
    maxOverallRequests?: number;
    /** Seconds before a request counts as timed out. */
    timeout?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    requests?: RequestTemplate[];
    excludeErrorStats?: boolean;
    skipAggregateResult?: boolean;
  }

  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
    total?: number;
    /** Only on `requests`: how many were written to the wire. */
    sent?: number;
  }

  export interface Result {
    latency: Histogram;
    requests: Histogram;
    throughput: Histogram;
    duration: number;
    errors: number;
    timeouts: number;
    mismatches: number;
    non2xx: number;
    resets: number;
    totalCompletedRequests?: number;
    statusCodeStats: Record<string, { count: number }>;
    '2xx': number;
  }

  export interface Instance extends EventEmitter {
    stop(): void;
    on(event: 'done', listener: (result: Result) => void): this;
    on(
      event: 'response',
      listener: (client: unknown, statusCode: number, bytes: number, ms: number) => void,
    ): this;
    on(event: 'reqError', listener: (error: Error) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  export default function autocannon(
    options: Options,
    callback?: (error: Error | null, result: Result) => void,
  ): Instance;
}
