import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureTables } from '../../lib/db/create-tables.js';
import { prefixedTableNames, tableEnvVar } from '../../lib/kernel/tables.js';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';
import { projectRoot } from './support.js';
import { bundleFunction } from './variants.js';

/** A file's size and SHA-256: equal byte for byte, and two short lines when not. */
const fingerprint = (file: string) => {
  const bytes = readFileSync(file);
  return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
};

/**
 * The API reference page's function, bundled for real: Redoc's script ships beside the handler
 * (the page loads it from the function, never from a CDN) and is not bundled into it a second time;
 * so does the OpenAPI document `npm run openapi` generated (docs/openapi.json), which the page embeds.
 */
let outdir: string;
let assetDir: string;

beforeAll(() => {
  ({ outdir, assetDir } = bundleFunction('api-docs'));
}, 120_000);

afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
});

describe('api-docs bundle', () => {
  it("holds Redoc's script, as the package ships it, and the document in assets/ beside the handler", () => {
    expect(readdirSync(assetDir).sort()).toEqual(['assets', 'index.mjs', 'index.mjs.map']);
    expect(readdirSync(join(assetDir, 'assets')).sort()).toEqual(['openapi.json', 'redoc.standalone.js']);
    expect(fingerprint(join(assetDir, 'assets', 'openapi.json'))).toEqual(
      fingerprint(join(projectRoot, 'docs', 'openapi.json')),
    );
    const shipped = createRequire(join(projectRoot, 'package.json')).resolve(
      'redoc/bundles/redoc.standalone.js',
    );
    // Size and digest: byte for byte, and readable when it fails. toEqual on the two 1 MB Buffers walked
    // them element by element: 2.6 s alone and 7.1 s in a whole run, against 5 ms; and its diff is unreadable.
    expect(fingerprint(join(assetDir, 'assets', 'redoc.standalone.js'))).toEqual(fingerprint(shipped));
  });

  it('keeps the handler small: Redoc is read at run time, not bundled', () => {
    const handlerBytes = statSync(join(assetDir, 'index.mjs')).size;
    const redocBytes = statSync(join(assetDir, 'assets', 'redoc.standalone.js')).size;
    // Redoc's own modules, not a size race.
    const handler = readFileSync(join(assetDir, 'index.mjs'), 'utf8');
    for (const redocPart of ['perfect-scrollbar', 'styled-components', 'mobx']) {
      expect(handler).not.toContain(redocPart);
    }
    // Nor the document's generator (its class names survive keepNames): the function serves docs/openapi.json.
    expect(handler).not.toContain('OpenApiGeneratorV31');
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

  it('serves the page and the patched Redoc from assets/, run as the Lambda runs it, on DynamoDB Local', async () => {
    const endpoint = process.env.TEST_DYNAMODB_ENDPOINT;
    if (!endpoint) throw new Error('TEST_DYNAMODB_ENDPOINT is not set: run with `npm test`');
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const names = prefixedTableNames(`t${randomBytes(4).toString('hex')}-`);
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials });
    await ensureTables(client, names, { timeToLive: false });
    client.destroy();
    // Only what the CDK stack gives this function: its two tables, no project around it.
    const env = {
      PATH: process.env.PATH ?? '',
      DYNAMODB_ENDPOINT: endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      LOG_LEVEL: 'SILENT',
      [tableEnvVar('rateLimits')]: names.rateLimits,
      [tableEnvVar('apiKeys')]: names.apiKeys,
    };
    const invoke = `
      const { handler } = await import('./index.mjs');
      const event = (query) => ({
        resource: '/api/v1/docs', path: '/api/v1/docs', httpMethod: 'GET', headers: {}, multiValueHeaders: {},
        queryStringParameters: query, multiValueQueryStringParameters: null, pathParameters: null,
        stageVariables: null, body: null, isBase64Encoded: false,
        requestContext: { requestId: 'bundle-test', identity: { sourceIp: '192.0.2.1' } },
      });
      const context = { functionName: 'api-docs', awsRequestId: 'bundle-test', getRemainingTimeInMillis: () => 10000 };
      const page = await handler(event(null), context);
      const script = await handler(event({ asset: 'redoc.standalone.js' }), context);
      process.stdout.write(JSON.stringify({
        page: { status: page.statusCode, headers: page.headers, body: page.body },
        script: { status: script.statusCode, type: script.headers['Content-Type'], body: script.body },
      }));
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', invoke], {
      cwd: assetDir,
      env,
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    const { page, script } = JSON.parse(out) as {
      page: { status: number; headers: Record<string, string>; body: string };
      script: { status: number; type: string; body: string };
    };
    expect(page.status).toBe(200);
    expect(page.headers['Content-Type']).toMatch(/^text\/html/);
    expect(page.headers['Content-Security-Policy']).toMatch(/style-src 'self' 'nonce-[A-Za-z0-9+/=]+'/);
    expect(page.body).toContain('<script src="docs?asset=redoc.standalone.js"');
    // The document in the page has the overview the source tree gives, read from assets/openapi.json.
    const { description } = buildOpenApiDocument(routes).info;
    expect(description).toContain("## The specification's flow");
    expect(page.body).toContain(JSON.stringify(description).slice(1, -1).replace(/</g, '\\u003c'));
    expect(script.status).toBe(200);
    expect(script.type).toMatch(/^text\/javascript/);
    expect(script.body).toContain('document.currentScript&&document.currentScript.nonce');
    expect(script.body).not.toContain('cdn.redoc.ly');
  });
});
