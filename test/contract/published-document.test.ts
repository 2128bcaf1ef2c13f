import { describe, expect, it } from '@jest/globals';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { publishedDocument, readPublishedDocumentText } from '../../lib/http/published-document.js';
import { routes } from '../../functions/routes.js';

/*
 * The openapi and api-docs functions serve docs/openapi.json instead of building the document at
 * their cold start. What they serve must be what the generator makes from the routes today, so a
 * schema changed without `npm run openapi` fails here (generated-files.slow.test.ts checks the text).
 */
describe('the document the openapi and api-docs functions serve', () => {
  const generated = JSON.parse(JSON.stringify(buildOpenApiDocument(routes))) as { info: { title: string } };

  it('is the document the generator builds from the route table', () => {
    expect(JSON.parse(readPublishedDocumentText())).toEqual(generated);
  });

  it('is sent as the generator serialises it, with its title for the page', () => {
    const { json, title } = publishedDocument();
    expect(json).toBe(JSON.stringify(buildOpenApiDocument(routes)));
    expect(title).toBe(generated.info.title);
  });
});
