import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';

/*
 * docs/openapi.json and the SDK's types are generated from the route table by `npm run openapi`, and
 * committed. The check runs the script itself (`--check`, through tsx as `npm run openapi` runs it): its
 * tools, openapi-typescript and Prettier, are ES modules, which Jest's registry does not load
 * (jest.config.js).
 */
describe('the files `npm run openapi` generates', () => {
  let lines: string[];

  beforeAll(() => {
    const result = spawnSync(
      process.execPath,
      [resolve('node_modules/tsx/dist/cli.mjs'), 'scripts/openapi.ts', '--check'],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (result.error) throw result.error;
    lines = `${result.stdout}${result.stderr}`.split('\n').filter((line) => line !== '');
  }, 150_000);

  it('has docs/openapi.json committed up to date (run `npm run openapi` after changing a schema)', () => {
    expect(lines).toContain('docs/openapi.json: up to date');
  });

  it('has the SDK types generated from it up to date in packages/sdk/src/generated/api.ts (`npm run openapi`)', () => {
    expect(lines).toContain('packages/sdk/src/generated/api.ts: up to date');
  });

  it("has receipt-core's receipt types up to date in packages/receipt-core/src/generated/receipt.ts", () => {
    expect(lines).toContain('packages/receipt-core/src/generated/receipt.ts: up to date');
  });
});
