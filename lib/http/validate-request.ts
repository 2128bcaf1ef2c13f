import { InvalidRequestError } from '../kernel/errors.js';
import type { RouteDeclaration } from '../kernel/route.js';
import type { Middleware } from './context.js';
import { parseInput } from './validation.js';

/** The declared request parts, parsed; every bad field of every part is named in one 400. */
export function validateRequest(route: RouteDeclaration): Middleware {
  const { params, query, headers, body } = route.request;
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
              Object.keys(headers.shape).flatMap((name) => {
                const value = event.headers?.[name.toLowerCase()];
                return value === undefined ? [] : [[name, value]];
              }),
            ),
          ),
        body && parseInput(body.schema, event.body),
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
