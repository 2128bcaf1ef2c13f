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
  /**
   * A logger of its own for one invocation. Made apart from `run` so that the local adapter can count
   * it as its own work (local/server.ts): a Lambda instance has one logger, which injectLambdaContext
   * resets between invocations, and makes none per request (a child costs ~60 µs: a Console, options
   * read from the environment).
   */
  loggerFor(): Logger;
  /** Runs one invocation with `logger` (from loggerFor) as the handlers' logger. */
  run<T>(logger: Logger, invocation: () => Promise<T>): Promise<T>;
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
  return {
    logger,
    loggerFor: () => base.createChild(),
    run: (invocationLogger, invocation) => current.run(invocationLogger, invocation),
  };
}
