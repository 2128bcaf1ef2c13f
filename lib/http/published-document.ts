import { readStaticAsset } from './static-assets.js';

/**
 * The OpenAPI document as `npm run openapi` wrote it (docs/openapi.json), for the two routes that
 * serve it. Building it in the function would import every route's schemas and the generator, the
 * slowest cold start of all (PERFORMANCE.md, "Cold start, fourth round"); the committed file is what
 * the generator makes from the routes (test/contract/published-document.test.ts).
 */
export const PUBLISHED_DOCUMENT_FILE = 'openapi.json';

/** Listed among the serving routes' staticAssets: the CDK build copies it into `assets/` beside the bundle. */
export const PUBLISHED_DOCUMENT_ASSET = `./docs/${PUBLISHED_DOCUMENT_FILE}`;

/** In a Lambda from `assets/` beside the bundle; from the source tree, docs/. */
export const readPublishedDocumentText = (): string =>
  readStaticAsset(PUBLISHED_DOCUMENT_ASSET, import.meta.url);

export interface PublishedDocument {
  /** The document as compact JSON, the body the openapi route sends. */
  json: string;
  title: string;
}

let published: PublishedDocument | undefined;

/** Read and compacted on first use (a few ms), then kept for the container's life. */
export function publishedDocument(): PublishedDocument {
  if (!published) {
    const document = JSON.parse(readPublishedDocumentText()) as { info: { title: string } };
    published = { json: JSON.stringify(document), title: document.info.title };
  }
  return published;
}
