import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ServiceFunction } from '../../infra/service-function.js';
import { bundleFunction } from './variants.js';

/**
 * One real esbuild run through the house construct (the other infra tests skip bundling): the
 * asset must be minified ESM with a source map, load under Node, and carry no build leftovers.
 */
let outdir: string;
let assetDir: string;

beforeAll(() => {
  let service: ServiceFunction;
  ({ service, outdir, assetDir } = bundleFunction('health'));
  expect(service.function.runtime.name).toBe('nodejs24.x');
}, 120_000);

afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
});

describe('function bundle', () => {
  it('holds the ESM bundle, its source map and the payment SDKs, and not the esbuild metafile', () => {
    expect(readdirSync(assetDir).sort()).toEqual(['index.mjs', 'index.mjs.map', 'node_modules']);
    expect(readdirSync(join(assetDir, 'node_modules')).sort()).toEqual(['square', 'stripe']);
  });

  it('keeps the payment SDKs out of the handler bundle and loads them from beside it on first use', () => {
    const code = readFileSync(join(assetDir, 'index.mjs'), 'utf8');
    expect(code).not.toContain('api.stripe.com');
    expect(code).not.toContain('connect.squareup.com');
    const out = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const stripe = await import('stripe'); const square = await import('square'); console.log(typeof stripe.default, typeof square.SquareClient, typeof square.SquareEnvironment.Production);",
      ],
      { cwd: assetDir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function function string');
  });

  it('gives CommonJS dependencies a require() and is minified', () => {
    const code = readFileSync(join(assetDir, 'index.mjs'), 'utf8');
    expect(
      code.startsWith("import { createRequire as __receiptServiceCreateRequire } from 'node:module';"),
    ).toBe(true);
    expect(code).toContain('//# sourceMappingURL=index.mjs.map');
    // Minified: far fewer lines than modules bundled.
    expect(code.split('\n').length).toBeLessThan(200);
    const map = JSON.parse(readFileSync(join(assetDir, 'index.mjs.map'), 'utf8')) as {
      sources: string[];
      sourcesContent?: unknown;
    };
    expect(map.sources.some((source) => source.endsWith('functions/platform/health/handler.ts'))).toBe(true);
    expect(map.sources.some((source) => /(^|\/)local\//.test(source.replace(/^(\.\.\/)+/, '')))).toBe(false);
    expect(map.sourcesContent).toBeUndefined();
  });

  it('loads under Node without the project around it and exports the handler', () => {
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('./index.mjs'); console.log(typeof m.handler);"],
      { cwd: assetDir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function');
    // Only the shipped SDKs: nothing else from the project's node_modules came along.
    expect(existsSync(join(assetDir, 'node_modules', 'zod'))).toBe(false);
  });
});

/*
 * A function that uses the shared receipt rules: receipt-core is a workspace package, which lib/
 * imports by name and esbuild finds through tsconfig.json's paths, so its sources are in the bundle
 * and a Lambda, which has no workspace around it, needs nothing else.
 */
describe('a bundle that uses receipt-core', () => {
  let refundOutdir: string;
  let refundAssetDir: string;

  beforeAll(() => {
    ({ outdir: refundOutdir, assetDir: refundAssetDir } = bundleFunction('create-refund'));
  }, 120_000);

  afterAll(() => {
    rmSync(refundOutdir, { recursive: true, force: true });
  });

  it('carries receipt-core from its sources and loads under Node without the project around it', () => {
    const map = JSON.parse(readFileSync(join(refundAssetDir, 'index.mjs.map'), 'utf8')) as {
      sources: string[];
    };
    expect(map.sources.some((source) => source.endsWith('packages/receipt-core/src/refund-receipt.ts'))).toBe(
      true,
    );
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('./index.mjs'); console.log(typeof m.handler);"],
      { cwd: refundAssetDir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function');
  });
});
