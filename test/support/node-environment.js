import { TestEnvironment } from 'jest-environment-node';

/**
 * Jest's Node environment, letting go of a test file once it has run. Node never frees a finished
 * file's context (V8 keeps it from a function template's per-context cache), and jest-circus keeps its
 * state on that context's global: the file's tree of describe blocks and tests, whose closures hold
 * everything the file loaded (its local stack, clients, SDKs). Every file a worker had run stayed in
 * memory and made each later collection dearer: the integration tier in one process grew to ~900 MB
 * after forced collections. Dropping that state at teardown keeps it at ~300-400 MB. Only the state
 * goes: the context's builtins stay, for any callback of the file that still runs.
 */
export default class ReleasingEnvironment extends TestEnvironment {
  async teardown() {
    const global = this.global;
    if (global) {
      for (const key of Object.getOwnPropertySymbols(global)) {
        if (key.description === 'JEST_STATE_SYMBOL') Reflect.deleteProperty(global, key);
      }
    }
    await super.teardown();
  }
}
