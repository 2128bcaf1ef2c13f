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
  deployed = withResponsesInline(deployed);
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

/**
 * The responses the deployed view shares: a response object that two or more operations declare alike
 * (once the reader's prose is gone most error responses are) is a component of this name and a `$ref`
 * where it was. Only the deployed view has them; `publicView` puts each back where it was referenced.
 */
export const SHARED_RESPONSE_PREFIX = 'Shared';
const sharedRef = (name: string) => `#/components/responses/${name}`;

/** The operations of a path item: its methods and API Gateway's ANY. */
const operationsOf = (document: Json): Json[] =>
  Object.values((document.paths as Record<string, Json> | undefined) ?? {}).flatMap((item) =>
    Object.values(item).filter(
      (operation): operation is Json => isObject(operation) && isObject(operation.responses),
    ),
  );

/**
 * The operations whose responses API Gateway never reads: all but those a mock integration answers,
 * whose integration response maps its headers onto the method response they declare. Those stay
 * inline, as the importer has always read them; a Lambda proxy's responses are the reader's only.
 */
const shareableOperationsOf = (document: Json): Json[] =>
  operationsOf(document).filter((operation) => {
    const integration = operation['x-amazon-apigateway-integration'];
    return !(isObject(integration) && integration.type === 'mock');
  });

/**
 * `document` (the deployed view, changed in place) with each response object that occurs more than
 * once replaced by a `$ref` to a shared component (SHARED_RESPONSE_PREFIX): the template's bytes per
 * route (docs/DEPLOY.md, "What one more route costs").
 */
export function shareResponses<T extends Json>(document: T): T {
  const seen = new Map<string, number>();
  const responsesOf = (operation: Json) => operation.responses as Record<string, unknown>;
  for (const operation of shareableOperationsOf(document))
    for (const response of Object.values(responsesOf(operation))) {
      if (!isObject(response) || '$ref' in response) continue;
      const key = JSON.stringify(response);
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  const names = new Map(
    [...seen]
      .filter(([, count]) => count > 1)
      .map(([key], index) => [key, `${SHARED_RESPONSE_PREFIX}${index + 1}`]),
  );
  if (names.size === 0) return document;
  const components = ((document as Json).components ??= {}) as Json;
  const shared = (components.responses ??= {}) as Json;
  for (const [key, name] of names) {
    if (name in shared) throw new Error(`The public document already has a response named ${name}`);
    shared[name] = JSON.parse(key) as unknown;
  }
  for (const operation of shareableOperationsOf(document))
    for (const [status, response] of Object.entries(responsesOf(operation))) {
      const name = isObject(response) && !('$ref' in response) && names.get(JSON.stringify(response));
      if (name) responsesOf(operation)[status] = { $ref: sharedRef(name) };
    }
  return document;
}

const isSharedName = (name: string) => new RegExp(`^${SHARED_RESPONSE_PREFIX}\\d+$`).test(name);

/** A copy of `deployed` with each shared response (shareResponses) back in place and its component gone. */
function withResponsesInline(deployed: Json): Json {
  const document = structuredClone(deployed);
  const shared = ((document.components as Json | undefined)?.responses ?? {}) as Json;
  const byRef = new Map(
    Object.keys(shared)
      .filter(isSharedName)
      .map((name) => [sharedRef(name), shared[name]]),
  );
  if (byRef.size === 0) return document;
  for (const operation of operationsOf(document)) {
    const responses = operation.responses as Record<string, unknown>;
    for (const [status, response] of Object.entries(responses)) {
      const inline = isObject(response) && typeof response.$ref === 'string' && byRef.get(response.$ref);
      if (inline) responses[status] = structuredClone(inline);
    }
  }
  for (const name of Object.keys(shared)) if (isSharedName(name)) delete shared[name];
  return document;
}
