import { Buffer } from 'node:buffer';
import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { TestEnvironment } from 'jest-environment-node';

/** A line the service's logger (Powertools, JSON) writes: it goes to the file's log, not the output. */
const SERVICE_LOG_LINE = /^\{"level":"/;
/** How much of a failed file's log is printed; the whole of it stays in its file. */
const PRINTED_LINES = 400;

/**
 * Jest's Node environment, which sends the service's log lines to a file per test file and prints
 * that log only when the file fails, and lets go of a test file once it has run.
 *
 * The logs: the stacks under test run in the test's process and log JSON to its stdout, thousands of
 * lines a run that hid the one failure among them. Here they go to test-artifacts/logs/<test file>.log
 * (written again by each run); a file with a failed test or hook prints its log's last lines after
 * it. Anything else written to stdout or stderr passes through, and a test that captures the logs
 * (test/support/logs.ts) still sees every line, as its capture wraps this one.
 *
 * Letting go: Node never frees a finished file's context (V8 keeps it from a function template's
 * per-context cache), and jest-circus keeps its state on that context's global: the file's tree of
 * describe blocks and tests, whose closures hold everything the file loaded (its local stack, clients,
 * SDKs). Every file a worker had run stayed in memory and made each later collection dearer: the
 * integration tier in one process grew to ~900 MB after forced collections. Dropping that state at
 * teardown keeps it at ~300-400 MB. Only the state goes: the context's builtins stay, for any
 * callback of the file that still runs.
 */
export default class ReleasingEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    const rootDir = config.projectConfig.rootDir;
    this.testFile = relative(rootDir, context.testPath);
    this.logPath = join(rootDir, 'test-artifacts', 'logs', `${this.testFile}.log`);
    this.failed = false;
  }

  async setup() {
    await super.setup();
    mkdirSync(dirname(this.logPath), { recursive: true });
    const fd = openSync(this.logPath, 'w');
    this.logFd = fd;
    this.restores = [process.stdout, process.stderr].map((stream) => {
      const original = stream.write;
      stream.write = function write(chunk, ...rest) {
        const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
        if (SERVICE_LOG_LINE.test(text)) {
          writeSync(fd, text);
          const callback = rest.find((argument) => typeof argument === 'function');
          if (callback) process.nextTick(callback);
          return true;
        }
        return original.call(this, chunk, ...rest);
      };
      return () => {
        stream.write = original;
      };
    });
  }

  handleTestEvent(event) {
    if (event.name === 'test_fn_failure' || event.name === 'hook_failure') this.failed = true;
  }

  async teardown() {
    for (const restore of this.restores ?? []) restore();
    if (this.logFd !== undefined) {
      closeSync(this.logFd);
      if (this.failed) this.printLog();
    }
    const global = this.global;
    if (global) {
      for (const key of Object.getOwnPropertySymbols(global)) {
        if (key.description === 'JEST_STATE_SYMBOL') Reflect.deleteProperty(global, key);
      }
    }
    await super.teardown();
  }

  printLog() {
    const lines = readFileSync(this.logPath, 'utf8').split('\n').filter(Boolean);
    if (lines.length === 0) return;
    const shown = lines.slice(-PRINTED_LINES);
    const heading =
      shown.length < lines.length
        ? `the last ${shown.length} of its ${lines.length} service log lines`
        : `its ${lines.length} service log line${lines.length === 1 ? '' : 's'}`;
    process.stderr.write(
      `\n${this.testFile} failed; ${heading} (all in ${this.logPath}):\n${shown.join('\n')}\n\n`,
    );
  }
}
