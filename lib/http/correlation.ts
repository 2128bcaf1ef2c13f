import type { PlatformDeps } from '../app/deps.js';
import type { Middleware, ParsedInput } from './context.js';

/**
 * What a request's log lines and its trace are found by: ids only, never a hashedPan, key, token id or
 * API key. Trace annotations are indexed and searchable by anyone who may read traces, and log lines
 * outlive the request, so this type admits exactly these four names.
 */
export interface CorrelationKeys {
  /** API Gateway's request id, the X-Request-Id a client quotes. */
  requestId?: string;
  /** The route's name (functions/<feature>/<name>/). */
  route?: string;
  /** The authenticated caller's client. */
  clientId?: string;
  /** The receipt the request names, where it names one. */
  receiptId?: string;
}

/**
 * Adds `keys` to every later log line of this invocation (Powertools' appendKeys, which the
 * observability middleware's injectLambdaContext resets when the invocation ends) and, where there is
 * a tracer, as X-Ray annotations on the invocation's handler segment. Called by each middleware as it
 * learns a key.
 */
export function correlate(deps: Pick<PlatformDeps, 'logger' | 'tracer'>, keys: CorrelationKeys): void {
  // Called three or four times a request: one plain loop, no intermediate arrays.
  const known: Record<string, string> = {};
  for (const name in keys) {
    const value = keys[name as keyof CorrelationKeys];
    if (value !== undefined) known[name] = value;
  }
  deps.logger.appendKeys(known);
  if (deps.tracer) for (const name in known) deps.tracer.putAnnotation(name, known[name] as string);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const receiptIdIn = (value: unknown): string | undefined => {
  const candidate =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>).receiptId : undefined;
  // Only an id's shape: an envelope's receiptId is merely a bounded string until the crypto checks it.
  return typeof candidate === 'string' && UUID.test(candidate) ? candidate : undefined;
};

/**
 * The receipt a validated request names: its path parameter (GET /receipts/{receiptId}), the body's
 * own member (payment creation, the flattened encrypt form), the nested receipt's (the nested encrypt
 * form) or the envelope's (decrypt, store-transaction).
 */
export function receiptIdOf(input: ParsedInput): string | undefined {
  const body = input.body as Record<string, unknown> | undefined;
  return [input.params, body, body?.receipt, body?.envelope].map(receiptIdIn).find(Boolean);
}

/** After validation: the receipt the request concerns joins its log lines and trace. */
export function correlateReceipt(deps: Pick<PlatformDeps, 'logger' | 'tracer'>): Middleware {
  return {
    before: (request) => {
      const receiptId = request.context.input ? receiptIdOf(request.context.input) : undefined;
      if (receiptId) correlate(deps, { receiptId });
    },
  };
}
