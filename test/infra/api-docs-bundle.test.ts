import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { App, Stack } from 'aws-cdk-lib';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Template } from 'aws-cdk-lib/assertions';
import { defaultProjectRoot } from '../../infra/receipt-service-stack.js';
import { ServiceFunction } from '../../infra/service-function.js';
import { findRoute } from '../../lib/routes.js';
import { cdkJsonContext } from './support.js';

/**
 * The API reference page's function, bundled for real: Redoc's script ships beside the handler
 * (the page loads it from the function, never from a CDN) and is not bundled into it a second time.
 */
let outdir: string;
let assetDir: string;

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'receipt-service-docs-bundle-'));
  const app = new App({ outdir, context: cdkJsonContext() });
  const stack = new Stack(app, 'DocsBundleTest');
  const tracingPolicy = new Policy(stack, 'Tracing', {
    statements: [new PolicyStatement({ actions: ['xray:PutTraceSegments'], resources: ['*'] })],
  });
  new ServiceFunction(stack, 'Docs', {
    route: findRoute('api-docs'),
    projectRoot: defaultProjectRoot,
    functionName: 'bundle-test-api-docs',
    environment: {},
    logRetention: RetentionDays.ONE_DAY,
    tracingPolicy,
  });
  app.synth();
  const [fn] = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
  const key = (fn as { Properties: { Code: { S3Key: string } } }).Properties.Code.S3Key;
  assetDir = join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
}, 120_000);

afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
});

describe('api-docs bundle', () => {
  it("holds Redoc's script, as the package ships it, in assets/ beside the handler", () => {
    expect(readdirSync(assetDir).sort()).toEqual(['assets', 'index.mjs', 'index.mjs.map']);
    expect(readdirSync(join(assetDir, 'assets'))).toEqual(['redoc.standalone.js']);
    const shipped = createRequire(join(defaultProjectRoot, 'package.json')).resolve(
      'redoc/bundles/redoc.standalone.js',
    );
    expect(readFileSync(join(assetDir, 'assets', 'redoc.standalone.js'))).toEqual(readFileSync(shipped));
  });

  it('keeps the handler small: Redoc is read at run time, not bundled', () => {
    const handlerBytes = statSync(join(assetDir, 'index.mjs')).size;
    const redocBytes = statSync(join(assetDir, 'assets', 'redoc.standalone.js')).size;
    expect(handlerBytes).toBeLessThan(redocBytes);
    expect(readFileSync(join(assetDir, 'index.mjs'), 'utf8')).not.toContain('perfect-scrollbar');
    // The whole function stays far under Lambda's 50 MB zipped / 250 MB unzipped limits.
    expect(handlerBytes + redocBytes).toBeLessThan(5 * 1024 * 1024);
  });

  it('loads under Node without the project around it', () => {
    const out = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', "const m = await import('./index.mjs'); console.log(typeof m.handler);"],
      { cwd: assetDir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' },
    );
    expect(out.trim()).toBe('function');
  });
});
