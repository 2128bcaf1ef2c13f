/**
 * A schema built on its first use instead of at import: `lazySchema(() => z.object({…}))` has the
 * built schema's type (so `z.infer`, `.shape` and composition are unchanged) and builds it the first
 * time anything reads it, parsing included. Each read goes through a Proxy to the one built schema,
 * so methods run on the real schema and `.meta()` reads its registry entry, which is how the OpenAPI
 * generator names components (docs/openapi.json is unchanged). zod's own `z.toJSONSchema` looks the
 * registry up by the object it walks, the Proxy, so it would inline a lazy schema's component: the
 * project does not use it.
 * Measured: a parse behind it costs ~1 % more than a direct one; a cold start no longer pays for
 * schemas its function never reaches at import (docs/PERFORMANCE.md, "Cold start, fourth round").
 */
export function lazySchema<S extends object>(build: () => S): S {
  let built: S | undefined;
  const schema = (): S => (built ??= build());
  const methods = new Map<PropertyKey, unknown>();
  return new Proxy({} as S, {
    get: (_target, property) => {
      const value: unknown = Reflect.get(schema(), property);
      if (typeof value !== 'function') return value;
      // Bound once per method, so `schema.parse` called again allocates nothing.
      let bound = methods.get(property);
      if (bound === undefined) {
        bound = (value as (...args: unknown[]) => unknown).bind(schema());
        methods.set(property, bound);
      }
      return bound;
    },
    has: (_target, property) => Reflect.has(schema(), property),
    getPrototypeOf: () => Reflect.getPrototypeOf(schema()),
    ownKeys: () => Reflect.ownKeys(schema()).filter((key) => key !== 'prototype'),
    getOwnPropertyDescriptor: (_target, property) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(schema(), property);
      // A Proxy may not report a property its own (empty) target lacks as non-configurable.
      return descriptor && { ...descriptor, configurable: true };
    },
  });
}
