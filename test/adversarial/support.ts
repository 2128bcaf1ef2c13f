import fc from 'fast-check';
import type { ErrorBody } from '../../lib/http/error-envelope.js';
import type { HttpReply } from '../support/stack.js';

/**
 * Shared pieces of the adversarial suite: what every reply must look like, JSON mutation operators for
 * the fuzzers, and byte-level tampering of base64 fields.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The service's one error body. */
export type ErrorEnvelope = ErrorBody;

export interface SuccessEnvelope<T = unknown> {
  success: true;
  data: T;
}

/**
 * FUZZ_SCALE multiplies every run count (FUZZ_SCALE=20 for a long local hunt); FUZZ_SEED pins the seed to
 * replay a failure. The defaults keep the whole suite well inside its time budget on two cores.
 */
export const fuzzOptions = (numRuns: number): { numRuns: number; seed?: number } => {
  const scale = Number(process.env.FUZZ_SCALE ?? '1');
  const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
  return {
    numRuns: Math.max(1, Math.round(numRuns * (Number.isFinite(scale) ? scale : 1))),
    ...(seed === undefined ? {} : { seed }),
  };
};

const ERROR_KEYS = new Set(['code', 'message', 'details', 'timestamp', 'request_id']);
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Text that only an unhandled exception, a stack trace or a driver error would put in a body. */
export const INTERNAL_TEXT: RegExp[] = [
  /\bat\s+[\w.<>$]+\s+\(/,
  /\.(?:ts|js|mjs|cjs):\d+/,
  /node_modules/,
  /\/work\//,
  /"stack"/,
  /\b(?:TypeError|ReferenceError|RangeError|URIError|EvalError|JsonError|ValidationException|ResourceNotFoundException)\b/,
  /Maximum call stack/,
  /MAX_SAFE_INTEGER/,
  /Cannot read propert/,
  /is not a function/,
  /undefined is not/,
];

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why a reply breaks the response contract, or undefined when it keeps it. */
/** `success` is the status the route answers when it accepts the request (201 for one that creates). */
export function replyProblem(reply: HttpReply, success: 200 | 201 = 200): string | undefined {
  if (reply.status >= 500) return `server error ${reply.status}`;
  if (reply.status !== success && (reply.status < 400 || reply.status > 499))
    return `unexpected status ${reply.status}`;
  if (!(reply.headers.get('content-type') ?? '').startsWith('application/json'))
    return 'content type is not JSON';
  const leaked = INTERNAL_TEXT.find((pattern) => pattern.test(reply.text));
  if (leaked) return `body carries internal text matching ${String(leaked)}`;
  const body: unknown = reply.json;
  if (!isPlainObject(body)) return 'body is not a JSON object';
  if (reply.status === success) {
    const keys = Object.keys(body).sort().join(',');
    return body.success === true && keys === 'data,success' ? undefined : 'not a success envelope';
  }
  if (body.success !== false || Object.keys(body).sort().join(',') !== 'error,success')
    return 'not an error envelope';
  const error = body.error;
  if (!isPlainObject(error)) return 'error is not an object';
  const extra = Object.keys(error).filter((key) => !ERROR_KEYS.has(key));
  if (extra.length > 0) return `error carries unexpected members ${extra.join(', ')}`;
  if (typeof error.code !== 'string' || error.code.length === 0)
    return 'error.code is not a non-empty string';
  if (typeof error.message !== 'string' || error.message.length === 0)
    return 'error.message is not a non-empty string';
  if (typeof error.timestamp !== 'string' || !ISO_INSTANT.test(error.timestamp))
    return 'error.timestamp is not an ISO instant';
  if (typeof error.request_id !== 'string' || error.request_id.length === 0)
    return 'error.request_id is missing';
  const headerId = reply.headers.get('x-request-id');
  if (headerId !== null && headerId !== error.request_id) return 'error.request_id differs from X-Request-Id';
  if (error.details !== undefined && !isPlainObject(error.details)) return 'error.details is not an object';
  return undefined;
}

// Head and tail: in a long body the damaged member is as likely to sit at the end as at the start.
/** The error member of an error reply, if the reply has one. */
export const errorOf = (reply: HttpReply): ErrorEnvelope['error'] | undefined =>
  (reply.json as Partial<ErrorEnvelope> | undefined)?.error;

/** The data member of a success reply, if the reply has one. */
export const dataOf = (reply: HttpReply): unknown =>
  (reply.json as Partial<SuccessEnvelope> | undefined)?.data;

const clip = (text: string, max = 600): string =>
  text.length > max ? `${text.slice(0, max / 2)} … ${text.slice(-max / 2)} (${text.length} chars)` : text;

/** Throws with the request and the reply, so a fast-check counterexample reads as a bug report. */
export function assertServiceReply(reply: HttpReply, request: string, success: 200 | 201 = 200): void {
  const problem = replyProblem(reply, success);
  if (problem)
    throw new Error(
      `${problem}\n  request:  ${clip(request)}\n  response: ${reply.status} ${clip(reply.text)}`,
    );
}

export const describeRequest = (method: string, path: string, body?: string): string =>
  `${method} ${path}${body === undefined ? '' : ` ${body}`}`;

// ---------------------------------------------------------------------------------------------------
// JSON mutation operators.

type Step = string | number;

/** Every location in a JSON value, the root included, in document order. */
export function pathsOf(value: Json, prefix: Step[] = [], out: Step[][] = []): Step[][] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((item, index) => pathsOf(item, [...prefix, index], out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) pathsOf(item, [...prefix, key], out);
  }
  return out;
}

const childOf = (value: Json, step: Step): Json | undefined =>
  Array.isArray(value)
    ? value[step as number]
    : value !== null && typeof value === 'object'
      ? value[step as string]
      : undefined;

// defineProperty rather than assignment: assigning to `__proto__` would change the prototype instead of
// adding the own member that JSON.stringify has to write out.
const put = (container: Json[] | { [key: string]: Json }, step: Step, item: Json): void => {
  Object.defineProperty(container, step, {
    value: item,
    enumerable: true,
    writable: true,
    configurable: true,
  });
};

export type Mutation =
  | { kind: 'drop'; at: number }
  | { kind: 'replace'; at: number; value: Json; label: string }
  | { kind: 'addKey'; at: number; key: string; value: Json };

/** Applies one mutation to a deep copy; `at` picks a location modulo the number of locations. */
export function applyMutation(root: Json, mutation: Mutation): Json {
  const copy = JSON.parse(JSON.stringify(root)) as Json;
  const all = pathsOf(copy);
  const candidates =
    mutation.kind === 'addKey'
      ? all.filter((path) => {
          const target = path.reduce<Json | undefined>(
            (node, step) => (node === undefined ? undefined : childOf(node, step)),
            copy,
          );
          return target !== null && typeof target === 'object' && !Array.isArray(target);
        })
      : all;
  const path = candidates.length > 0 ? candidates[mutation.at % candidates.length]! : [];
  const parentPath = path.slice(0, -1);
  const last = path[path.length - 1];
  const parent = parentPath.reduce<Json | undefined>(
    (node, step) => (node === undefined ? undefined : childOf(node, step)),
    copy,
  );
  if (mutation.kind === 'addKey') {
    const target = last === undefined ? copy : childOf(parent as Json, last);
    if (target !== null && typeof target === 'object' && !Array.isArray(target))
      put(target, mutation.key, mutation.value);
    return copy;
  }
  if (last === undefined || parent === undefined || parent === null || typeof parent !== 'object') {
    // The root itself: dropping it sends `null`, replacing it sends the value.
    return mutation.kind === 'drop' ? null : mutation.value;
  }
  if (mutation.kind === 'drop') {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last as string];
  } else {
    put(parent, last, mutation.value);
  }
  return copy;
}

/** Deeply nested objects or arrays: DynamoDB stops at 32 levels, recursive code far later. */
export const nested = (depth: number, kind: 'object' | 'array'): Json => {
  let value: Json = 1;
  for (let level = 0; level < depth; level += 1) value = kind === 'array' ? [value] : { a: value };
  return value;
};

const nastyFragments = [
  '\u0000',
  '\ud800',
  '\udfff',
  '\u202e',
  '\u200b',
  '\ufeff',
  '\uffff',
  '\u2028',
  '\u{10ffff}',
  'ﷺ',
  'İ',
  '\\',
  '"',
  '\n',
  '%00',
  '${jndi:ldap://x}',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '../../',
  '{{7*7}}',
];

/** Printable graphemes of any script mixed with control, bidi, BOM and lone-surrogate code units. */
export const unicodeText = fc.string({
  unit: fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }),
    fc.constantFrom(...nastyFragments),
  ),
  maxLength: 40,
});

/** Lengths just around the service's documented limits, and far past them. */
export const hugeText = fc
  .tuple(
    fc.constantFrom(
      0,
      1,
      32,
      33,
      64,
      65,
      128,
      129,
      256,
      257,
      320,
      321,
      1024,
      2048,
      2049,
      4096,
      4097,
      16_384,
      16_385,
      100_000,
    ),
    fc.constantFrom('x', 'é', '😀', '0', 'A', '='),
  )
  .map(([length, unit]) => unit.repeat(length));

export const edgeNumber = fc.oneof(
  fc.constantFrom(
    -1,
    -0.5,
    0.5,
    0,
    1e308,
    -1e308,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    1e21,
    5e-324,
    1e-7,
    0.1,
    1e16,
    1e-200,
    1e200,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
);

const wrongType: fc.Arbitrary<Json> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.string({ maxLength: 8 }),
  fc.constant<Json>([]),
  fc.constant<Json>({}),
  fc.array(fc.integer(), { maxLength: 3 }),
);

const garbage: fc.Arbitrary<Json> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>,
  fc
    .tuple(fc.integer({ min: 20, max: 80 }), fc.constantFrom('object' as const, 'array' as const))
    .map(([depth, kind]) => nested(depth, kind)),
);

const replacement: fc.Arbitrary<{ value: Json; label: string }> = fc.oneof(
  wrongType.map((value) => ({ value, label: 'wrong type' })),
  hugeText.map((value) => ({ value, label: 'huge string' })),
  edgeNumber.map((value) => ({ value, label: 'edge number' })),
  garbage.map((value) => ({ value, label: 'nested garbage' })),
  unicodeText.map((value) => ({ value, label: 'unicode' })),
);

const injectedKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '__defineGetter__',
    'isEscrowed',
    'escrowKeyId',
    'clientId',
    'userId',
    'status',
    '',
  ),
  unicodeText,
);

const injectedValue: fc.Arbitrary<Json> = fc.oneof(
  garbage,
  wrongType,
  fc.constant({ prototype: { polluted: true } }),
  fc.constant({ polluted: true }),
);

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.nat().map((at): Mutation => ({ kind: 'drop', at })),
  fc
    .tuple(fc.nat(), replacement)
    .map(([at, { value, label }]): Mutation => ({ kind: 'replace', at, value, label })),
  fc
    .tuple(fc.nat(), injectedKey, injectedValue)
    .map(([at, key, value]): Mutation => ({ kind: 'addKey', at, key, value })),
);

/** Text-level damage applied after serialising: the JSON parser sees these, not the schema. */
export type RawDamage = 'none' | 'bom' | 'trailing-garbage' | 'duplicate-key' | 'truncate';
export const rawDamage: fc.Arbitrary<RawDamage> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('none' as const) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      'bom' as const,
      'trailing-garbage' as const,
      'duplicate-key' as const,
      'truncate' as const,
    ),
  },
);

export function damage(text: string, kind: RawDamage): string {
  switch (kind) {
    case 'none':
      return text;
    case 'bom':
      return `\ufeff${text}`;
    case 'trailing-garbage':
      return `${text} }{`;
    case 'duplicate-key': {
      // JSON.parse keeps the last duplicate, so the garbage copy goes at the end.
      const first = /^\{"((?:[^"\\]|\\.)*)"/.exec(text);
      return first && text.endsWith('}') ? `${text.slice(0, -1)},"${first[1]}":{"$gt":""}}` : text;
    }
    case 'truncate':
      return text.slice(0, Math.floor(text.length / 2));
  }
}

// ---------------------------------------------------------------------------------------------------
// Byte-level tampering.

/** XORs each listed bit once (duplicates after the modulo are dropped, so the result always differs). */
export function flipBits(bytes: Buffer, bits: number[]): Buffer {
  const copy = Buffer.from(bytes);
  const total = copy.length * 8;
  for (const bit of new Set(bits.map((value) => value % total))) copy[Math.floor(bit / 8)]! ^= 1 << (bit % 8);
  return copy;
}

export const base64Field = {
  decode: (value: string, url: boolean): Buffer => Buffer.from(value, url ? 'base64url' : 'base64'),
  encode: (bytes: Buffer, url: boolean): string => bytes.toString(url ? 'base64url' : 'base64'),
};

export const toBody = (value: unknown): string => JSON.stringify(value);
