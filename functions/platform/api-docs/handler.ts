import { randomBytes } from 'node:crypto';
import { httpEndpoint, type PlatformDeps } from '../../../lib/http/pipeline.js';
import { publishedDocument } from '../../../lib/http/published-document.js';
import { apiDocsRoute as route } from './route.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { initScript, loadRedoc, pagePolicy, renderPage } from './page.js';

const javascript = 'text/javascript; charset=utf-8';

/**
 * GET /api/v1/docs — the API reference page and, with `?asset=`, its two scripts: one function
 * serves all of it, so the page needs no other origin. No API key (per-IP budget, like openapi.json).
 * The page embeds the document `npm run openapi` generated (lib/http/published-document.ts).
 */
export const createHandler = (deps: PlatformDeps) => {
  // Read on first use: the local server loads every handler at start, and most never serve this.
  let redoc: string | undefined;
  return httpEndpoint(route, deps, async ({ query }) => {
    if (query.asset === 'redoc.standalone.js') {
      redoc ??= loadRedoc(import.meta.url);
      return { text: redoc, contentType: javascript };
    }
    if (query.asset === 'init.js') return { text: initScript, contentType: javascript };
    const nonce = randomBytes(16).toString('base64');
    return {
      text: renderPage(publishedDocument(), nonce),
      contentType: 'text/html; charset=utf-8',
      contentSecurityPolicy: pagePolicy(nonce),
    };
  });
};

export const handler = awsHandler(route, createHandler);
