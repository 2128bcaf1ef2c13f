import { defineRoute } from '../../../lib/kernel/route.js';
import { PUBLISHED_DOCUMENT_ASSET } from '../../../lib/http/published-document.js';
import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';

export const openApiDocumentResponse = lazySchema(() =>
  z
    .object({
      openapi: z.string(),
      info: z.record(z.string(), z.unknown()),
      paths: z.record(z.string(), z.unknown()),
    })
    .meta({
      id: 'OpenApiDocument',
      description: 'This OpenAPI 3.1 document, sent as it is (not in the success envelope).',
    }),
);

export const openApiRoute = defineRoute({
  name: 'openapi',
  method: 'GET',
  path: '/api/v1/openapi.json',
  entry: 'functions/platform/openapi/handler.ts',
  apiKeyRequired: false,
  roles: [],
  tables: { rateLimits: 'write', apiKeys: 'read' },
  // The document `npm run openapi` generated, which the function serves as it is.
  staticAssets: [PUBLISHED_DOCUMENT_ASSET],
  docs: {
    tag: 'health',
    summary: 'This OpenAPI document',
    description:
      'The contract of this API version, generated from the same route declarations and zod schemas the ' +
      'endpoints validate with. No API key. Sent as it is, not inside the success envelope.',
  },
  request: {},
  response: { description: 'The OpenAPI 3.1 document.', schema: openApiDocumentResponse, enveloped: false },
  errors: {},
});
