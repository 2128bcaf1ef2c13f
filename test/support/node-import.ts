import { fileURLToPath } from 'node:url';
import { constants, runInThisContext } from 'node:vm';

/*
 * Jest runs the tests as CommonJS without `--experimental-vm-modules` (jest.config.js says why), so a
 * module in a test file's registry can neither be an ES module that Jest does not transform nor
 * `import()` one. Test tools that are ES modules, or that import them, and that are not the code under
 * test load through Node's own loader instead: ESLint (it imports eslint.config.js), dependency-cruiser,
 * puppeteer-core and pdf.js. A tool loaded this way is shared by the files a worker runs and never reset
 * between them, which suits a tool and would not suit the code under test.
 *
 * The function is compiled in the worker's own context with Node's default loader for its `import()`
 * (vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER); its filename is this file, so that a package resolves
 * as it would from here.
 */
const nativeImport = runInThisContext('(specifier) => import(specifier)', {
  filename: fileURLToPath(import.meta.url),
  importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
}) as (specifier: string) => Promise<unknown>;

/** An ES module (or a package that imports one) through Node's own `import()`, typed as `import()` types it. */
export function nodeImport<Namespace>(specifier: string): Promise<Namespace> {
  return nativeImport(specifier) as Promise<Namespace>;
}
