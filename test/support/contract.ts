import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsModule from 'ajv-formats';
import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';

/**
 * Checks responses against the OpenAPI document: the status must be declared for the operation, the
 * declared required headers present and well-formed, and the JSON body valid against the declared
 * schema (JSON Schema 2020-12, as OpenAPI 3.1 uses). test/support/stack.ts runs it on every response
 * the integration tests receive, so the document and the service cannot drift apart silently.
 */
export interface ContractReply {
  method: string;
  path: string;
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

export interface ContractViolation {
  method: string;
  path: string;
  status: number;
  problems: string[];
}

export class ContractViolationError extends Error {
  constructor(readonly violation: ContractViolation) {
    const { method, path, status, problems } = violation;
    super(
      `Response breaks the OpenAPI contract (lib/openapi): ${method} ${path} → ${status}\n` +
        problems.map((problem) => `  - ${problem}`).join('\n'),
    );
    this.name = 'ContractViolationError';
  }
}

interface Ref {
  $ref: string;
}
interface HeaderSpec {
  required?: boolean;
  schema?: Record<string, unknown>;
}
interface ResponseSpec {
  headers?: Record<string, HeaderSpec | Ref>;
  content?: Record<string, { schema?: unknown }>;
}
interface OperationSpec {
  responses: Record<string, ResponseSpec | Ref>;
}
type PathItem = Record<string, OperationSpec>;
interface DocumentShape {
  paths: Record<string, PathItem>;
  components: { responses: Record<string, ResponseSpec>; headers: Record<string, HeaderSpec> };
}

/** Where a response's declaration lives in the document, so ajv can compile it by JSON pointer. */
interface Declared {
  pointer: string;
  spec: ResponseSpec;
}

const DOCUMENT_ID = 'https://receipts.local/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Statuses any request can meet before routing decides anything: the pipeline's and the edge's own. */
const UNROUTED_STATUSES = ['413', '429', '500'];

const isRef = (value: unknown): value is Ref =>
  typeof value === 'object' && value !== null && typeof (value as { $ref?: unknown }).$ref === 'string';
const escapePointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');
const localPointer = (ref: string) => {
  if (!ref.startsWith('#/')) throw new Error(`Only local $refs are supported in the contract, got ${ref}`);
  return ref.slice(1);
};

function describeError(error: ErrorObject): string {
  const where = error.instancePath === '' ? '(body)' : error.instancePath;
  const params = error.params as Record<string, unknown>;
  const detail =
    params.additionalProperty !== undefined
      ? ` '${String(params.additionalProperty)}'`
      : params.allowedValues !== undefined
        ? ` ${JSON.stringify(params.allowedValues)}`
        : '';
  return `${where} ${error.message ?? 'is invalid'}${detail} (schema ${error.schemaPath})`;
}

function pathMatcher(template: string): RegExp {
  const source = template
    .split(/\{[^}]+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${source}$`);
}

export class ContractValidator {
  private readonly ajv: Ajv2020;
  private readonly document: DocumentShape;
  private readonly matchers: { template: string; pattern: RegExp }[];
  private readonly compiled = new Map<string, ValidateFunction>();
  readonly violations: ContractViolation[] = [];

  constructor(document: unknown = buildOpenApiDocument(routes)) {
    // A JSON round trip: ajv must see exactly what clients download, not zod's objects.
    this.document = JSON.parse(JSON.stringify(document)) as DocumentShape;
    this.ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
    formatsModule.default(this.ajv);
    this.ajv.addSchema({ ...this.document, $id: DOCUMENT_ID });
    // A literal segment wins over a parameter (…/signing-keys/challenges over …/signing-keys/{kid}), as
    // API Gateway and the local server route them: templates with fewer parameters are tried first.
    const parameters = (template: string) => template.split('{').length;
    this.matchers = Object.keys(this.document.paths)
      .toSorted((a, b) => parameters(a) - parameters(b))
      .map((template) => ({ template, pattern: pathMatcher(template) }));
  }

  private validator(pointer: string): ValidateFunction {
    let validate = this.compiled.get(pointer);
    if (!validate) {
      validate = this.ajv.getSchema(`${DOCUMENT_ID}#${pointer}`);
      if (!validate) throw new Error(`No schema at ${pointer} in the OpenAPI document`);
      this.compiled.set(pointer, validate);
    }
    return validate;
  }

  private resolveResponse(spec: ResponseSpec | Ref, pointer: string): Declared {
    if (!isRef(spec)) return { pointer, spec };
    const target = localPointer(spec.$ref);
    const name = target.split('/').pop() ?? '';
    const resolved = this.document.components.responses[name];
    if (!resolved) throw new Error(`Unresolved response ${spec.$ref}`);
    return { pointer: target, spec: resolved };
  }

  /** The responses a request may get: its operation's, or the catch-alls for wrong methods and unknown paths. */
  private declaredResponses(
    method: string,
    path: string,
  ): { label: string; responses: Map<string, Declared> } {
    const pathname = path.split('?')[0] ?? path;
    const match = this.matchers.find(({ pattern }) => pattern.test(pathname));
    const responses = new Map<string, Declared>();
    if (!match) {
      // Unknown paths match a catch-all: 404 in the envelope, or what any request can meet.
      for (const [status, name] of [
        ['404', 'NotFound'],
        ['413', 'PayloadTooLarge'],
        ['429', 'RateLimited'],
        ['500', 'InternalError'],
      ] as const) {
        responses.set(status, this.resolveResponse({ $ref: `#/components/responses/${name}` }, ''));
      }
      return { label: 'no documented path (catch-all)', responses };
    }
    const item = this.document.paths[match.template] ?? {};
    const base = `/paths/${escapePointer(match.template)}`;
    const operation = item[method.toLowerCase()];
    if (operation) {
      for (const [status, spec] of Object.entries(operation.responses)) {
        responses.set(
          status,
          this.resolveResponse(spec, `${base}/${method.toLowerCase()}/responses/${status}`),
        );
      }
      return { label: `${method.toUpperCase()} ${match.template}`, responses };
    }
    // A documented path with another method: every operation declares the 405 for exactly this case.
    const [otherMethod, other] = Object.entries(item).find(([key]) => METHODS.includes(key)) ?? [];
    if (other && otherMethod) {
      for (const status of ['405', ...UNROUTED_STATUSES]) {
        const spec = other.responses[status];
        if (spec)
          responses.set(status, this.resolveResponse(spec, `${base}/${otherMethod}/responses/${status}`));
      }
    }
    return { label: `${match.template} without ${method.toUpperCase()}`, responses };
  }

  private headerProblems(reply: ContractReply, declared: Declared): string[] {
    const problems: string[] = [];
    for (const [name, entry] of Object.entries(declared.spec.headers ?? {})) {
      const header = isRef(entry)
        ? this.document.components.headers[localPointer(entry.$ref).split('/').pop() ?? '']
        : entry;
      if (!header) {
        problems.push(`header ${name}: unresolved declaration`);
        continue;
      }
      const value = reply.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`header ${name} is declared required but missing`);
        continue;
      }
      const schema = header.schema ?? {};
      // Header values are text; integer headers must be digits and then satisfy the schema as numbers.
      const candidate = schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
      const validate = this.ajv.compile(schema);
      if (!validate(candidate)) {
        problems.push(
          `header ${name}: ${JSON.stringify(value)} ${validate.errors?.map((error) => error.message).join('; ')}`,
        );
      }
    }
    return problems;
  }

  private bodyProblems(reply: ContractReply, declared: Declared): string[] {
    const json = declared.spec.content?.['application/json'];
    const contentType = reply.headers.get('content-type') ?? '';
    // A page or script: its media type must be one declared; its body is text, nothing to validate.
    const declaredTypes = Object.keys(declared.spec.content ?? {});
    if (!json && declaredTypes.length > 0) {
      const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
      return declaredTypes.includes(mediaType)
        ? []
        : [`content-type is ${JSON.stringify(contentType)}, declared ${declaredTypes.join(' or ')}`];
    }
    if (!json) return reply.text === '' ? [] : ['a body was sent but none is declared'];
    const problems: string[] = [];
    if (!/^application\/json\b/i.test(contentType))
      problems.push(`content-type is ${JSON.stringify(contentType)}, declared application/json`);
    if (reply.json === undefined)
      return [...problems, `body is not JSON: ${JSON.stringify(reply.text.slice(0, 200))}`];
    const validate = this.validator(`${declared.pointer}/content/application~1json/schema`);
    if (!validate(reply.json)) problems.push(...(validate.errors ?? []).slice(0, 8).map(describeError));
    return problems;
  }

  /** Every way this response departs from the document; empty when it conforms. */
  check(reply: ContractReply): string[] {
    const { label, responses } = this.declaredResponses(reply.method, reply.path);
    const declared = responses.get(String(reply.status));
    if (!declared) {
      return [
        `status ${reply.status} is not declared for ${label} (declared: ${[...responses.keys()].join(', ') || 'none'})`,
      ];
    }
    return [...this.headerProblems(reply, declared), ...this.bodyProblems(reply, declared)];
  }

  /** Records and throws on a non-conforming response, so the test that received it fails. */
  assert(reply: ContractReply): void {
    const problems = this.check(reply);
    if (problems.length === 0) return;
    const violation = {
      method: reply.method.toUpperCase(),
      path: reply.path,
      status: reply.status,
      problems,
    };
    this.violations.push(violation);
    throw new ContractViolationError(violation);
  }
}

let shared: ContractValidator | undefined;

/**
 * The document as built once for the run (test/support/global-setup.js). A run without that setup (the
 * unit tier) has none: undefined, and the validator builds its own (the constructor's default).
 */
const runDocument = (): unknown => {
  const file = process.env.TEST_OPENAPI_DOCUMENT;
  return file ? (JSON.parse(readFileSync(file, 'utf8')) as unknown) : undefined;
};

/** One validator per test file: compiling schemas is not free. */
export const contractValidator = (): ContractValidator => (shared ??= new ContractValidator(runDocument()));
