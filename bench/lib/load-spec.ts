/** The contract between bench/http.ts and the load-generator process it starts (bench/http-load.ts). */

/** Replaced by a fresh UUID in every request body, so each request creates a new receipt. */
export const RECEIPT_ID_PLACEHOLDER = '__BENCH_RECEIPT_ID__';
export const TRANSACTION_ID_PLACEHOLDER = '__BENCH_TRANSACTION_ID__';

export interface LoadSpec {
  /** Loopback only: http://127.0.0.1:<port>. */
  url: string;
  path: string;
  apiKey: string;
  connections: number;
  durationSec: number;
  /** Stops early after this many requests (the grant-access slot budget). */
  maxRequests?: number;
  /** Sent round-robin, one per request, across all connections. */
  bodies: string[];
  /** With `bodies`, one path each (a refund names its payment in the path); `path` otherwise. */
  paths?: string[];
  timeoutSec: number;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface LoadOutcome {
  /** Responses received. */
  requests: number;
  /** Requests written, including those still unanswered when the run ended (the service finishes them). */
  sent: number;
  durationSec: number;
  requestsPerSecond: number;
  /** Every response, whatever its status. */
  latencyMs: LatencySummary;
  /** 2xx responses only. */
  okLatencyMs: LatencySummary;
  non2xx: number;
  statusCodes: Record<string, number>;
  errors: number;
  timeouts: number;
  /** The first non-2xx body seen, to say why without a second run. */
  firstErrorBody: string | null;
  /** CPU the load generator itself used during the run (it shares the machine's cores with the service). */
  cpuMs: number;
}
