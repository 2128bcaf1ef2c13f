import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { buildOpenApiDocument } from '../lib/openapi/document.js';

/**
 * `npm run openapi`: writes docs/openapi.json from the zod schemas. A contract test fails while the
 * committed file differs from what this writes, so run it after changing a schema or a route.
 */
export const openApiPath = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'openapi.json');

/** Formatted by the project's Prettier settings, so `npm run lint` (prettier --check .) accepts the file. */
export async function renderOpenApiDocument(): Promise<string> {
  const options = (await resolveConfig(openApiPath)) ?? {};
  return format(JSON.stringify(buildOpenApiDocument()), { ...options, filepath: openApiPath });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await mkdir(dirname(openApiPath), { recursive: true });
  await writeFile(openApiPath, await renderOpenApiDocument());
  console.log(`Wrote ${openApiPath}`);
}
