import leven from 'leven';
import * as z from 'zod';
import type { FieldProblem } from '../kernel/errors.js';

/**
 * zod's issues turned into what a caller can act on: one entry per field, "is required" for a
 * missing one, and each unknown field named on its own with the closest known name, so a misspelt
 * `recipientHashedPAN` is refused instead of silently dropped (and its receipt silently escrowed).
 */
type ParseResult<T> = { success: true; data: T } | { success: false; fields: FieldProblem[] };

const describePath = (prefix: string, path: readonly PropertyKey[]): string => {
  const parts = [...(prefix ? [prefix] : []), ...path.map(String)];
  return parts.length === 0 ? '(body)' : parts.join('.');
};

/**
 * The known name a caller most likely meant: the same but for case, a few edits away (one per three
 * characters, at most three), or one that starts with what was sent (`logo` for `logoUrl`).
 */
export function closestName(unknown: string, known: readonly string[]): string | undefined {
  const lowered = unknown.toLowerCase();
  const allowed = Math.max(1, Math.min(3, Math.ceil(unknown.length / 3)));
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const candidate = name.toLowerCase();
    const distance = leven(lowered, candidate);
    const close = distance <= allowed || (lowered.length >= 3 && candidate.startsWith(lowered));
    if (close && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

const shapeKeys = (schema: unknown): string[] => {
  const shape = (schema as { shape?: unknown } | undefined)?.shape;
  return shape && typeof shape === 'object' ? Object.keys(shape) : [];
};

/**
 * Parses `input` with `schema`. `prefix` names where the input came from when it is not the body
 * (a path parameter object is reported by parameter name, so the prefix is empty there too).
 */
/**
 * The keys an object knows, kept by the identity of the issue's `keys` array: zod copies that array
 * into the final issue, which no longer names the schema that raised it. Recorded through zod's
 * global error hook so that a schema parsing inside another (a transform choosing a form) is seen too.
 */
const knownKeys = new WeakMap<readonly string[], string[]>();
z.config({
  customError: (issue) => {
    if (issue.code === 'unrecognized_keys') knownKeys.set(issue.keys, shapeKeys(issue.inst));
    return undefined;
  },
});

/**
 * Parses `input` with `schema`. `prefix` names where the input came from when it is not the body
 * (a path parameter object is reported by parameter name, so the prefix is empty there too).
 */
export function parseInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
  prefix = '',
): ParseResult<z.output<S>> {
  const parsed = schema.safeParse(input, { reportInput: true });
  if (parsed.success) return { success: true, data: parsed.data };

  const byField = new Map<string, string[]>();
  const add = (field: string, message: string) => {
    const messages = byField.get(field) ?? [];
    if (!messages.includes(message)) messages.push(message);
    byField.set(field, messages);
  };
  for (const issue of parsed.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeys.get(issue.keys) ?? [];
      for (const key of issue.keys) {
        const suggestion = closestName(key, known);
        add(
          describePath(prefix, [...issue.path, key]),
          suggestion ? `is not a known field; did you mean "${suggestion}"?` : 'is not a known field',
        );
      }
      continue;
    }
    // A field that is absent fails its type check with no input, whatever its own message says.
    const missing = issue.code === 'invalid_type' && issue.input === undefined && issue.path.length > 0;
    add(describePath(prefix, issue.path), missing ? 'is required' : issue.message);
  }
  return {
    success: false,
    fields: [...byField].map(([field, messages]) => ({ field, message: messages.join('; ') })),
  };
}
