import { InvalidRequestError } from '../kernel/errors.js';
import type { RouteDeclaration } from '../kernel/route.js';
import type { Middleware } from './context.js';
import { parseInput } from './validation.js';

/** The body as the bytes that arrived, for a route that declares it raw: text, whatever its encoding on the way. */
const rawBody = (event: { body: string | null; isBase64Encoded?: boolean }): string =>
  event.body === null
    ? ''
    : event.isBase64Encoded
      ? Buffer.from(event.body, 'base64').toString('utf8')
      : event.body;

/** The declared request parts, parsed; every bad field of every part is named in one 400. */
export function validateRequest(route: RouteDeclaration): Middleware {
  const { params, query, headers, body } = route.request;
  // The declared header names and how they arrive (lower-cased by the normaliser), worked out once.
  const headerNames = headers
    ? Object.keys(headers.shape).map((name) => [name, name.toLowerCase()] as const)
    : [];
  return {
    before: (request) => {
      const event = request.event;
      const parts = [
        params && parseInput(params, event.pathParameters ?? {}),
        query && parseInput(query, event.queryStringParameters ?? {}),
        // Headers arrive lower-cased (the normaliser); the schema spells them as documented.
        headers &&
          parseInput(
            headers,
            Object.fromEntries(
              headerNames.flatMap(([name, arrives]) => {
                const value = event.headers?.[arrives];
                return value === undefined ? [] : [[name, value]];
              }),
            ),
          ),
        body && parseInput(body.schema, body.raw ? rawBody(event) : event.body),
      ] as const;
      const fields = parts.flatMap((part) => (part && !part.success ? part.fields : []));
      if (fields.length > 0) throw new InvalidRequestError('Invalid request', fields);
      const [parsedParams, parsedQuery, parsedHeaders, parsedBody] = parts.map((part) =>
        part && part.success ? part.data : undefined,
      );
      request.context.input = {
        params: parsedParams,
        query: parsedQuery,
        headers: parsedHeaders,
        body: parsedBody,
      };
    },
  };
}
