import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from '../lib/kernel/log.js';

/**
 * Lambda runs one invocation at a time per instance, so the keys a request appends to the Powertools
 * Logger (lib/http/correlation.ts: requestId, route, clientId, receiptId) belong to that request until
 * the next one resets them. The local server runs every function in one process and serves requests
 * at once: with one shared logger, a request's lines would carry whichever keys another request
 * appended last. Each request served here runs with a child logger of its own (same configuration and
 * persistent keys), and `logger`, which the handlers are given, writes through the current request's.
 */
export interface InvocationScope {
  /** What the handlers are given: the current request's logger, or the base one between requests. */
  logger: Logger;
  /** Runs one invocation with a logger of its own. */
  run<T>(invocation: () => Promise<T>): Promise<T>;
}

export function invocationScope(base: Logger): InvocationScope {
  const current = new AsyncLocalStorage<Logger>();
  const logger = new Proxy(base, {
    get(target, property) {
      const active = current.getStore() ?? target;
      const value: unknown = Reflect.get(active, property, active);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(active) : value;
    },
  });
  return { logger, run: (invocation) => current.run(base.createChild(), invocation) };
}
