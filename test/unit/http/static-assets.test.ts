import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from '@jest/globals';
import { patchScript, readStaticAsset } from '../../../lib/http/static-assets.js';

const folder = mkdtempSync(join(tmpdir(), 'static-assets-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('readStaticAsset', () => {
  it('reads the copy beside a Lambda bundle first', () => {
    mkdirSync(join(folder, 'assets'));
    writeFileSync(join(folder, 'assets', 'redoc.standalone.js'), 'beside the bundle');
    const bundle = pathToFileURL(join(folder, 'index.mjs')).href;
    expect(readStaticAsset('redoc/bundles/redoc.standalone.js', bundle)).toBe('beside the bundle');
  });

  it('reads the package from node_modules when no copy is there (the local server)', () => {
    const source = readStaticAsset('redoc/bundles/redoc.standalone.js', import.meta.url);
    expect(source).toContain('Redoc');
  });

  it("reads one of the project's own files from the project's root when no copy is there", () => {
    const source = readStaticAsset('./docs/openapi.json', import.meta.url);
    expect(JSON.parse(source)).toMatchObject({ openapi: expect.any(String) });
  });
});

describe('patchScript', () => {
  const patch = (find: string) => [{ why: 'test', find, replace: 'B' }];

  it('replaces text found exactly once', () => {
    expect(patchScript('xAy', patch('A'))).toBe('xBy');
  });

  it('throws when the text is missing or ambiguous, so an upgrade cannot drop a patch silently', () => {
    expect(() => patchScript('xy', patch('A'))).toThrow(/test/);
    expect(() => patchScript('AxA', patch('A'))).toThrow(/exactly once/);
  });
});
