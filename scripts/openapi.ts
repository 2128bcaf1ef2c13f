import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOpenApiDocument } from '../lib/openapi/document.js';

/**
 * `npm run openapi`: writes docs/openapi.json from the zod schemas. A contract test fails while the
 * committed file differs from what this writes, so run it after changing a schema or a route.
 */
export const openApiPath = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'openapi.json');

export const renderOpenApiDocument = (): string => `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`;

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await mkdir(dirname(openApiPath), { recursive: true });
  await writeFile(openApiPath, renderOpenApiDocument());
  console.log(`Wrote ${openApiPath}`);
}
