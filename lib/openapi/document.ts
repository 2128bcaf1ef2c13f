import { OpenAPIRegistry, OpenApiGeneratorV31, type RouteConfig } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import type { ErrorDoc, RouteDeclaration, Tag } from '../kernel/route.js';
import { errorCatalogue, errorStatuses, type ErrorStatus } from '../kernel/errors.js';
import { tiers } from '../kernel/tiers.js';
import { describeApi } from './overview.js';
import { errorEnvelope, successEnvelope } from './envelopes.js';

export const tags = [
  { name: 'health', description: 'Service status and the published contract; neither needs an API key.' },
  { name: 'onboarding', description: 'Key pairs and user registration, by the card issuer application.' },
  { name: 'keys', description: 'Short-lived decrypt access tokens.' },
  { name: 'receipts', description: 'Hybrid encryption and decryption of receipts.' },
  { name: 'transactions', description: 'Mappings between payment transactions and encrypted receipts.' },
  {
    name: 'payments',
    description: 'Gateway payments carrying an encrypted receipt, and decryption by payment id.',
  },
  {
    name: 'webhooks',
    description: 'Signed event delivery (Standard Webhooks): endpoints, secrets and delivery attempts.',
  },
  {
    name: 'merchants',
    description:
      'Merchant signing keys: the keys a merchant signs its receipts with (Receipt-Signature), whether it must, ' +
      'and the public keys a device checks a signed receipt with.',
  },
] as const satisfies readonly { name: Tag; description: string }[];

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

// Just enough of OpenAPI's JSON Schema to write the raw parts zod does not generate.
interface Ref {
  $ref: string;
}
interface RawSchema {
  type?: 'string' | 'integer' | 'object';
  enum?: string[];
  minimum?: number;
  pattern?: string;
  properties?: Record<string, RawSchema | Ref>;
  allOf?: (RawSchema | Ref)[];
}
interface RawHeader {
  description: string;
  schema: RawSchema;
}
interface RawResponse {
  // OpenAPI's response object allows x- extensions; declaring them keeps it assignable without a cast.
  [extension: `x-${string}`]: unknown;
  description: string;
  headers: Record<string, Ref>;
  content: { 'application/json': { schema: RawSchema } };
}
type AnyResponse = RouteConfig['responses'][string];

const ref = (kind: 'schemas' | 'responses' | 'headers', name: string): Ref => ({
  $ref: `#/components/${kind}/${name}`,
});

/** Response headers, all required: the pipeline sets them on every response, errors included. */
const headerComponents: Record<string, RawHeader> = {
  'X-Request-Id': {
    description: 'Identifies this request; equal to `error.request_id` in error bodies.',
    schema: { type: 'string' },
  },
  'X-RateLimit-Limit': {
    description:
      "Requests allowed in the window that binds: of the key's per-minute budget for this endpoint's group (by tier) and its tier's daily quota, the one with fewer requests left; the per-source-IP budget without a key.",
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Remaining': {
    description: 'Requests left in that window.',
    schema: { type: 'integer', minimum: 0 },
  },
  'X-RateLimit-Reset': {
    description:
      'When that window ends, in Unix epoch seconds (the next minute, or 00:00 UTC for the daily quota).',
    schema: { type: 'integer', minimum: 0 },
  },
  'Cache-Control': {
    description: 'Always `no-store`: receipts, tokens and keys must never sit in a shared cache.',
    schema: { type: 'string', enum: ['no-store'] },
  },
  'Cache-Control-Public': {
    description:
      'On the public key-log and JWKS answers only: `public, max-age=<seconds>`, so a shared cache may keep them ' +
      '(their errors are `no-store`).',
    schema: { type: 'string', pattern: '^public, max-age=[0-9]+$' },
  },
  ETag: {
    description: 'On the public, cacheable answers only: a strong validator of the body (its SHA-256).',
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  Allow: { description: 'The methods this path has, comma-separated.', schema: { type: 'string' } },
  Deprecation: {
    description:
      'On a deprecated operation only (RFC 9745): when it was deprecated, as `@` and Unix epoch seconds.',
    schema: { type: 'string', pattern: '^@-?[0-9]+$' },
  },
  Sunset: {
    description: 'On a deprecated operation only (RFC 8594): the HTTP-date after which it stops answering.',
    schema: { type: 'string' },
  },
};

const everyResponseHeaders = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Cache-Control',
];

const headersFor = (status: number): Record<string, Ref> => {
  const names = [...everyResponseHeaders];
  if (status === 429) names.push('Retry-After');
  if (status === 405) names.push('Allow');
  return Object.fromEntries(names.map((name) => [name, ref('headers', name)]));
};

/** What each status means wherever it occurs; its platform codes come from lib/kernel/errors.ts. */
const platformErrors: Record<ErrorStatus, { name: string; description: string }> = {
  400: {
    name: 'InvalidRequest',
    description:
      'The request is not valid: `error.details.fields` names every bad field. `invalid_request` only when API ' +
      'Gateway itself rejects the request.',
  },
  401: { name: 'Unauthorized', description: 'Missing or invalid X-API-Key.' },
  402: { name: 'PaymentDeclined', description: 'The payment was declined.' },
  403: {
    name: 'Forbidden',
    description: "The API key's roles do not include this operation.",
  },
  404: { name: 'NotFound', description: 'No resource at this path.' },
  405: {
    name: 'MethodNotAllowed',
    description: 'The path exists but not with this method; `Allow` lists the methods it has.',
  },
  409: { name: 'Conflict', description: 'The request conflicts with stored state.' },
  413: {
    name: 'PayloadTooLarge',
    description: 'The body is larger than 128 KiB.',
  },
  415: {
    name: 'UnsupportedMediaType',
    description: 'The body was not sent as `Content-Type: application/json`.',
  },
  429: {
    name: 'RateLimited',
    description: 'Too many requests in this window; retry after `Retry-After` seconds.',
  },
  500: {
    name: 'InternalError',
    description: 'An unexpected failure; the body never carries its cause.',
  },
  502: { name: 'BadGateway', description: 'The payment gateway failed.' },
  503: {
    name: 'ServiceUnavailable',
    description: 'A dependency (storage, the escrow key service, a gateway) is temporarily unavailable.',
  },
};

function errorResponseObject(
  status: ErrorStatus,
  description: string,
  codes: string[],
  details?: string,
): RawResponse {
  const error: RawSchema = {
    type: 'object',
    properties: {
      code: { type: 'string', enum: codes },
      ...(details ? { details: ref('schemas', details) } : {}),
    },
  };
  return {
    description,
    headers: headersFor(status),
    content: {
      'application/json': {
        schema: { allOf: [ref('schemas', 'ErrorEnvelope'), { type: 'object', properties: { error } }] },
      },
    },
  };
}

/** The error statuses a route can answer, from what its pipeline does before the endpoint runs. */
function platformStatuses(route: RouteDeclaration): ErrorStatus[] {
  const statuses: ErrorStatus[] = [404, 405, 429, 500];
  if (route.apiKeyRequired) statuses.push(401, 403, 503);
  // Every POST is size-checked, with or without a body schema.
  if (route.method === 'POST') statuses.push(413);
  if (route.request.body) statuses.push(400, 415);
  if (route.request.params || route.request.query || route.request.headers) statuses.push(400);
  return statuses;
}

const platformCodes = (status: ErrorStatus): readonly string[] => errorCatalogue[status].platform;

function errorResponses(route: RouteDeclaration): Record<string, AnyResponse> {
  const own: Partial<Record<ErrorStatus, ErrorDoc<ErrorStatus>>> = route.errors;
  const statuses = new Set<ErrorStatus>([
    ...platformStatuses(route),
    ...(Object.keys(own).map(Number) as ErrorStatus[]),
  ]);
  const responses: Record<string, AnyResponse> = {};
  for (const status of errorStatuses.filter((candidate) => statuses.has(candidate))) {
    const specific = own[status];
    const platform = platformErrors[status];
    if (!specific) {
      responses[status] = ref('responses', platform.name);
      continue;
    }
    const codes = [...new Set([...(specific.codes ?? []), ...platformCodes(status)])];
    const details = specific.details ?? (status === 400 ? 'ValidationDetails' : undefined);
    responses[status] = errorResponseObject(status, specific.description, codes, details);
  }
  return responses;
}

const operationId = (name: string) => name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());

function describeOperation(route: RouteDeclaration): string {
  const access = route.apiKeyRequired
    ? `Requires an X-API-Key with the role ${route.roles.map((role) => `\`${role}\``).join(' or ')}.`
    : 'No API key.';
  const sunset = route.deprecated
    ? `\n\nDeprecated: stops answering on ${new Date(route.deprecated.sunset).toISOString()}.`
    : '';
  const details = route.docs.details ? `\n\n${route.docs.details}` : '';
  return `${route.docs.description}${details}\n\n${access}${sunset}`;
}

const methods = { GET: 'get', POST: 'post', DELETE: 'delete' } as const;

function routeConfig(route: RouteDeclaration): RouteConfig {
  const { request, response, docs } = route;
  const successSchema = response.enveloped ? successEnvelope(response.schema) : response.schema;
  return {
    method: methods[route.method],
    path: route.path,
    operationId: operationId(route.name),
    tags: [docs.tag],
    summary: docs.summary,
    description: describeOperation(route),
    ...(route.apiKeyRequired ? {} : { security: [] }),
    ...(route.deprecated ? { deprecated: true } : {}),
    request: {
      ...(request.params ? { params: request.params } : {}),
      ...(request.query ? { query: request.query } : {}),
      ...(request.headers ? { headers: request.headers } : {}),
      ...(request.body
        ? {
            body: {
              required: true,
              description: request.body.description,
              content: { 'application/json': { schema: request.body.documented ?? request.body.schema } },
            },
          }
        : {}),
    },
    responses: {
      [response.status ?? 200]: {
        description: response.description,
        headers: {
          ...headersFor(response.status ?? 200),
          ...(route.cache
            ? { 'Cache-Control': ref('headers', 'Cache-Control-Public'), ETag: ref('headers', 'ETag') }
            : {}),
          ...(route.deprecated
            ? { Deprecation: ref('headers', 'Deprecation'), Sunset: ref('headers', 'Sunset') }
            : {}),
        },
        content: Object.fromEntries(
          (response.mediaTypes ?? ['application/json']).map((type) => [type, { schema: successSchema }]),
        ),
      },
      ...errorResponses(route),
    },
  };
}

const validationDetails = z
  .object({
    fields: z.array(z.object({ field: z.string(), message: z.string() })).meta({
      description:
        'Every bad field: a dotted path into the body (or the parameter name) and what is wrong with it.',
    }),
  })
  .meta({ id: 'ValidationDetails' });

/**
 * The OpenAPI 3.1 document of the service, built from the route declarations and the zod schemas
 * the pipeline validates with: every route is in it, and nothing else is.
 */
export function buildOpenApiDocument(routes: readonly RouteDeclaration[]): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'ApiKeyAuth', {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'A key issued to a client (merchant, issuer or both roles) with a subscription tier.',
  });
  // The deprecation headers only once a route is deprecated: an unused component is noise.
  const deprecationHeaderNames = routes.some((route) => route.deprecated) ? [] : ['Deprecation', 'Sunset'];
  for (const [name, header] of Object.entries(headerComponents)) {
    if (deprecationHeaderNames.includes(name)) continue;
    registry.registerComponent('headers', name, { ...header, required: true });
  }
  for (const status of errorStatuses) {
    const { name, description } = platformErrors[status];
    const codes = [...platformCodes(status)];
    // 402, 409 and 502 carry only endpoint codes, so each operation declares them inline.
    if (codes.length === 0) continue;
    registry.registerComponent(
      'responses',
      name,
      errorResponseObject(status, description, codes, status === 400 ? 'ValidationDetails' : undefined),
    );
  }
  for (const route of routes) registry.registerPath(routeConfig(route));
  const generator = new OpenApiGeneratorV31(
    [
      ...registry.definitions,
      // Referenced only from the raw error responses above, so zod never meets them on its own.
      { type: 'schema', schema: errorEnvelope },
      { type: 'schema', schema: validationDetails },
    ],
    {
      unionPreferredType: 'oneOf',
      sortComponents: 'alphabetically',
    },
  );
  return generator.generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Encrypted Digital Receipt Service',
      version: '1.0.0',
      description: describeApi(tiers, routes),
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [
      { url: 'http://127.0.0.1:3000', description: 'The local stack (`npm start`), with its own API keys.' },
      {
        url: 'https://{apiId}.execute-api.{region}.amazonaws.com/{stage}',
        description: 'A deployed stage (production or staging, each with its own API keys).',
        variables: {
          apiId: { default: 'api-id', description: 'The REST API id printed by `cdk deploy`.' },
          region: { default: 'us-east-1' },
          stage: { default: 'dev', description: 'The stage given to `cdk deploy -c stage=…`.' },
        },
      },
    ],
    security: [{ ApiKeyAuth: [] }],
    tags: tags.map((tag) => ({ ...tag })),
  });
}
