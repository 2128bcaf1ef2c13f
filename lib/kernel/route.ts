import type * as z from 'zod';
import type { EndpointCode, ErrorStatus } from './errors.js';
import type { TableKey } from './tables.js';
import type { RateGroup } from './tiers.js';

/**
 * What one endpoint is, declared once: the handler, the Middy pipeline, the OpenAPI generator, the
 * CDK stack and the local server all read the same declaration (functions/routes.ts lists them all).
 */
export type Role = 'merchant' | 'issuer';
export type HttpMethod = 'GET' | 'POST' | 'DELETE';
export type TableAccess = 'read' | 'write' | 'readWrite';
export type Tag =
  'health' | 'onboarding' | 'keys' | 'receipts' | 'transactions' | 'payments' | 'webhooks' | 'merchants';

/** Codes beyond the platform ones of a status, checked against lib/kernel/errors.ts's catalogue. */
export type ErrorDoc<S extends ErrorStatus> = CodedErrorDoc<EndpointCode<S>>;
// A status's codes come from the registered error classes (a conditional type, whose variance tsc
// cannot measure): the doc is generic in the codes themselves, so ErrorDoc<400> is an ErrorDoc<ErrorStatus>.
interface CodedErrorDoc<Code extends string> {
  description: string;
  codes?: Code[];
  /** A schema component for `error.details`, by name. */
  details?: string;
}
export type RouteErrors = { [S in ErrorStatus]?: ErrorDoc<S> };

/** What the infrastructure needs of a route: the CDK stack and the local server read only this. */
export interface RouteDefinition {
  /** Function name; also the folder under functions/. */
  name: string;
  method: HttpMethod;
  /** API Gateway style path; `{param}` segments are path parameters. */
  path: string;
  /** Handler module, relative to the project root. */
  entry: string;
  /** False only for the public health and contract endpoints. */
  apiKeyRequired: boolean;
  roles: readonly Role[];
  /** Tables the function touches and how: the CDK stack grants exactly this. */
  tables: Readonly<Partial<Record<TableKey, TableAccess>>>;
  /** Escrow key use: wrapping needs only the public key, unwrapping needs kms:Decrypt. */
  escrow?: 'wrap' | 'wrapAndUnwrap';
  /** Reaches the payment gateways (reads their credentials). */
  gateways?: boolean;
  /** Verifies the gateways' own webhooks: reads their signing secrets (no other function does). */
  gatewayEvents?: boolean;
  /**
   * A keyless route with a budget of its own instead of the per-source-IP one: the service counts it
   * per value of the path parameter `byParam` (a provider posts from a few shared addresses, so its
   * address says nothing), and API Gateway throttles the method at `edge`. The pipeline counts
   * nothing for it: the endpoint spends the budget only once it has verified the request (lib/http's
   * rate limit would let anyone spend it), and counts a request that fails verification against its
   * source address instead, `unverifiedPerSourcePerMinute` a minute.
   */
  keylessBudget?: {
    byParam: string;
    requestsPerMinute: number;
    unverifiedPerSourcePerMinute: number;
    edge: { ratePerSecond: number; burst: number };
  };
  /** Tags cards (lib/crypto/card-tag.ts): reads the card-tag key's secret. */
  cardTags?: boolean;
  /** Signs the key log's tree heads or serves the log key's public half: reads the log signing key. */
  logKey?: boolean;
  /**
   * A public answer anyone may cache: a 200 carries `Cache-Control: public, max-age=<maxAgeSeconds>`
   * and a strong ETag of its body instead of `no-store` (errors stay `no-store`).
   */
  cache?: { maxAgeSeconds: number };
  /** Pages with sealed cursors (lib/crypto/cursor.ts): reads the cursor key's secret. */
  cursors?: boolean;
  /** Whose per-minute budget a keyed call spends (lib/kernel/tiers.ts); read it with `rateGroupOf`. */
  rateGroup?: RateGroup;
  memoryMb?: number;
  timeoutSeconds?: number;
  /**
   * Files the function reads as they are, copied into the bundle's `assets/`: module paths of npm
   * packages, such as 'redoc/bundles/redoc.standalone.js' (the API reference page's renderer), or
   * this project's files from its root, such as './docs/openapi.json' (the published OpenAPI document).
   */
  staticAssets?: readonly string[];
}

/**
 * A function that serves no path (a stream consumer, a scheduled job): the stack builds it with the
 * house construct from this part of a route's definition, with the same table grants.
 */
export type FunctionDefinition = Omit<RouteDefinition, 'method' | 'path' | 'apiKeyRequired' | 'roles'>;

/** The request parts the pipeline validates before the endpoint runs; each becomes typed input. */
export interface RequestContract {
  /** Path parameters, by their `{name}` in the path. */
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** Request headers, spelt as documented; matched case-insensitively. */
  headers?: z.ZodObject;
  /**
   * `raw`: the body is not parsed as JSON; `schema` gets the string exactly as it arrived (a
   * signature is checked over its bytes), and `documented` says what it holds.
   */
  body?: { description: string; schema: z.ZodType; documented?: z.ZodType; raw?: boolean };
}

export interface RouteDeclaration extends RouteDefinition {
  /**
   * The endpoint's one home in prose: `description` says what it does in a few lines; `details`, when
   * there is more, its behaviour in full (Markdown). The reference page and the OpenAPI document show
   * both; docs/API.md links here instead of repeating them.
   */
  docs: { tag: Tag; summary: string; description: string; details?: string };
  request: RequestContract;
  /**
   * `enveloped`: wrapped in `{ success: true, data }`; otherwise sent as it is. `mediaTypes`: a
   * route that answers other than JSON (a page and its scripts) names what it sends; the schema
   * then describes each of them.
   */
  response: {
    description: string;
    schema: z.ZodType;
    enveloped: boolean;
    mediaTypes?: readonly string[];
    /** 201 for a route that creates a resource; 200 otherwise. */
    status?: 200 | 201;
  };
  errors: RouteErrors;
  /**
   * A route on its way out: its responses carry `Deprecation` (RFC 9745) and `Sunset` (RFC 8594),
   * and OpenAPI marks the operation deprecated. Dates are ISO 8601 (a day means its 00:00 UTC).
   */
  deprecated?: RouteDeprecation;
}

export interface RouteDeprecation {
  /** When the route stops answering. */
  sunset: string;
  /** When it was (or will be) deprecated; the moment of each response when omitted (it is deprecated now). */
  since?: string;
  /** Where the migration is explained: sent as `Link: <…>; rel="deprecation"`. */
  link?: string;
}

/** The headers a deprecated route's responses carry, at `now` (the Deprecation date when `since` is omitted). */
export function deprecationHeaders(deprecation: RouteDeprecation, now: Date): Record<string, string> {
  const since = deprecation.since === undefined ? now : new Date(deprecation.since);
  return {
    // RFC 9745: a Structured Field Date, `@` and Unix seconds.
    Deprecation: `@${Math.floor(since.getTime() / 1000)}`,
    // RFC 8594: an HTTP-date.
    Sunset: new Date(deprecation.sunset).toUTCString(),
    ...(deprecation.link ? { Link: `<${deprecation.link}>; rel="deprecation"` } : {}),
  };
}

/** Keeps a declaration's literal types (schemas, flags) so handlers infer their input from it. */
export const defineRoute = <const R extends RouteDeclaration>(route: R): R => route;

export const rateGroupOf = (route: Pick<RouteDefinition, 'rateGroup'>): RateGroup =>
  route.rateGroup ?? 'general';

type Infer<S> = S extends z.ZodType ? z.output<S> : undefined;
export type BodyOf<R extends RouteDeclaration> = R['request']['body'] extends { schema: infer S }
  ? Infer<S>
  : undefined;
export type ParamsOf<R extends RouteDeclaration> = Infer<R['request']['params']>;
export type QueryOf<R extends RouteDeclaration> = Infer<R['request']['query']>;
export type HeadersOf<R extends RouteDeclaration> = Infer<R['request']['headers']>;

/** True when two types are equal: a response schema's output is checked against the use case's type with it. */
export type SameType<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
