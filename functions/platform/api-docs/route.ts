import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { PUBLISHED_DOCUMENT_ASSET } from '../../../lib/http/published-document.js';

/** What the page loads besides itself, by the name it asks for; the route serves nothing else. */
export const apiDocsAssets = ['redoc.standalone.js', 'init.js'] as const;

export const apiDocsRoute = defineRoute({
  name: 'api-docs',
  method: 'GET',
  path: '/api/v1/docs',
  entry: 'functions/platform/api-docs/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read' },
  // Redoc, and the document `npm run openapi` generated, which the page embeds.
  staticAssets: ['redoc/bundles/redoc.standalone.js', PUBLISHED_DOCUMENT_ASSET],
  docs: {
    tag: 'health',
    summary: 'API reference page',
    description:
      'This OpenAPI document rendered as a page (Redoc) for a browser. Every script it loads comes from ' +
      'this route (`?asset=`), under a Content-Security-Policy that allows only this origin: scripts from ' +
      "'self', styles from 'self' and a per-response nonce (the renderer inserts its styles at run time), " +
      "images from 'self' and data: URLs (the renderer's inline SVG icons), no connections elsewhere. No " +
      'API key; calls count against the per-source-IP budget.',
    details:
      'No key. The same document as a page for a browser (Redoc), with `?asset=redoc.standalone.js` ' +
      'and `?asset=init.js` its two scripts (any other name is 400): everything the page loads comes ' +
      'from this endpoint. Its `Content-Security-Policy` allows this origin only — `script-src ' +
      "'self'`, `style-src 'self' 'nonce-…'` with a nonce new on every response (Redoc inserts its " +
      "styles at run time; no `'unsafe-inline'`), `img-src 'self' data:` (Redoc's inline SVG icons), " +
      "`connect-src 'self'`, `frame-ancestors 'none'`. Redoc's search is off: it runs in a `blob:` " +
      'worker, which the policy refuses.',
  },
  request: {
    query: lazySchema(() =>
      z.object({
        asset: z
          .enum(apiDocsAssets)
          .optional()
          .meta({ description: 'A script of the page; without it, the page itself.' }),
      }),
    ),
  },
  response: {
    description: 'The page (text/html), or the script named by `asset` (text/javascript).',
    schema: lazySchema(() => z.string()),
    enveloped: false,
    mediaTypes: ['text/html', 'text/javascript'],
  },
  errors: {},
});
