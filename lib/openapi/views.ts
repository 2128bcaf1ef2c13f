/**
 * One document, two views. The public view is what lib/openapi/document.ts builds (served at
 * GET /api/v1/openapi.json, docs/openapi.json, the SDK's types); the deployed view
 * (infra/api-definition.ts) is the same document with API Gateway's members added. `publicView`
 * takes those members away again, which is how the tests show the two differ in nothing else.
 */
export type { OpenApiDocument } from './document.js';

/** A security scheme carrying this member is API Gateway's (the edge authorizer), not the public's. */
export const API_GATEWAY_SECURITY_MARKER = 'x-amazon-apigateway-authtype';

const isApiGatewayMember = (key: string): boolean => key.startsWith('x-amazon-');

type Json = Record<string, unknown>;
type Requirement = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  !!value && typeof value === 'object' && !Array.isArray(value);

function withoutMembers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutMembers);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !isApiGatewayMember(key))
      .map(([key, inner]) => [key, withoutMembers(inner)]),
  );
}

/**
 * The document without API Gateway's members: every `x-amazon-*` member; the security schemes that are
 * API Gateway's (marked with `x-amazon-apigateway-authtype`) and the requirements naming only them; a
 * path left with nothing (the 404 answers); an operation's `security` left equal to the document's
 * own, which it then inherits.
 */
export function publicView(deployed: Json): Json {
  const schemes = (deployed.components as Json | undefined)?.securitySchemes as Json | undefined;
  const gatewaySchemes = new Set(
    Object.entries(schemes ?? {})
      .filter(([, scheme]) => isObject(scheme) && API_GATEWAY_SECURITY_MARKER in scheme)
      .map(([name]) => name),
  );
  const document = withoutMembers(deployed) as Json & {
    paths?: Record<string, Json>;
    components?: Json & { securitySchemes?: Json };
    security?: Requirement[];
  };
  for (const name of gatewaySchemes) delete document.components?.securitySchemes?.[name];

  const rootSecurity = JSON.stringify(document.security);
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    if (Object.keys(item).length === 0) {
      delete document.paths?.[path];
      continue;
    }
    for (const operation of Object.values(item)) {
      if (!isObject(operation) || !Array.isArray(operation.security)) continue;
      const security = (operation.security as Requirement[]).filter(
        (requirement) => !Object.keys(requirement).every((name) => gatewaySchemes.has(name)),
      );
      if (JSON.stringify(security) === rootSecurity && security.length > 0) delete operation.security;
      else operation.security = security;
    }
  }
  return document;
}

/**
 * Members that only a reader needs, which the deployed view leaves out to keep the service stack's
 * template well under CloudFormation's 1 MB: API Gateway does nothing with them.
 */
export const readersProse = ['description', 'summary', 'example', 'examples'] as const;
const prose = new Set<string>(readersProse);

const isResponseDescription = (name: string, parentKey: string | undefined): boolean =>
  name === 'description' && parentKey === 'responses';

function stripProse(value: unknown, key: string | undefined, parentKey: string | undefined): unknown {
  if (Array.isArray(value)) return value.map((inner) => stripProse(inner, undefined, key));
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      // A schema's properties are named by the data (a line item has a `description`).
      .filter(([name]) => key === 'properties' || !prose.has(name) || isResponseDescription(name, parentKey))
      // A response object must have a description (OpenAPI requires one): an empty one.
      .map(([name, inner]) => [
        name,
        key !== 'properties' && isResponseDescription(name, parentKey) ? '' : stripProse(inner, name, key),
      ]),
  );
}

/** The document without the reader's prose (`readersProse`), everything else as it is. */
export const withoutProse = <T>(document: T): T => stripProse(document, undefined, undefined) as T;
