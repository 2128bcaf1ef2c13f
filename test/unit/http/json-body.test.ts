import { describe, expect, it } from '@jest/globals';
import httpJsonBodyParser from '@middy/http-json-body-parser';
import type { Middleware } from '../../../lib/http/context.js';
import { jsonBody } from '../../../lib/http/json-body.js';

type Outcome = { body: unknown } | { status: unknown; message: string };

/** What a body parser leaves on the event, or the error it throws, for one request. */
async function outcomeOf(
  middleware: Middleware,
  event: { body: string | null; headers: Record<string, string>; isBase64Encoded?: boolean },
): Promise<Outcome> {
  const request = { event: { ...event }, context: {}, response: undefined, error: undefined };
  try {
    await middleware.before?.(request as never);
    return { body: request.event.body };
  } catch (error) {
    const { statusCode, message } = error as { statusCode?: number; message: string };
    return { status: statusCode, message };
  }
}

const middy = httpJsonBodyParser() as Middleware;
const json = { 'content-type': 'application/json' };

describe('the JSON body parser (Middy with a fast path)', () => {
  const cases: [
    string,
    { body: string | null; headers: Record<string, string>; isBase64Encoded?: boolean },
  ][] = [
    ['a receipt-like body', { body: '{"a":1,"b":[true,null,"x"],"c":{"d":"e\\"f"}}', headers: json }],
    [
      'a body with parameters in its type',
      { body: '{"a":1}', headers: { 'content-type': 'application/json; charset=utf-8' } },
    ],
    [
      'the header as sent before normalising',
      { body: '{"a":1}', headers: { 'Content-Type': 'application/json' } },
    ],
    [
      'a +json type (Middy alone)',
      { body: '{"a":1}', headers: { 'content-type': 'application/vnd.api+json' } },
    ],
    ['__proto__', { body: '{"__proto__":{"polluted":true}}', headers: json }],
    ['__proto__ nested', { body: '{"a":{"__proto__":{"polluted":true}}}', headers: json }],
    [
      '__proto__ spelt with escapes',
      { body: '{"\\u005f\\u005fproto\\u005f\\u005f":{"polluted":true}}', headers: json },
    ],
    ['constructor with a prototype', { body: '{"constructor":{"prototype":{"x":1}}}', headers: json }],
    [
      'constructor spelt with an escape',
      { body: '{"\\u0063onstructor":{"prototype":{"x":1}}}', headers: json },
    ],
    ['constructor as a plain value', { body: '{"constructor":"x"}', headers: json }],
    ['an escape that spells nothing forbidden', { body: '{"name":"caf\\u00e9"}', headers: json }],
    ['text that is not JSON', { body: '{"a":', headers: json }],
    ['a form body', { body: 'userId=1', headers: { 'content-type': 'text/plain' } }],
    ['no content type', { body: '{"a":1}', headers: {} }],
    [
      'a base64 body',
      { body: Buffer.from('{"a":1}').toString('base64'), headers: json, isBase64Encoded: true },
    ],
    ['a bare string', { body: '"text"', headers: json }],
  ];

  it.each(cases)('gives what Middy gives for %s', async (_name, event) => {
    expect(await outcomeOf(jsonBody(), event)).toEqual(await outcomeOf(middy, event));
  });

  it('still refuses prototype-polluting keys with Middy’s 422', async () => {
    expect(await outcomeOf(jsonBody(), { body: '{"__proto__":{"x":1}}', headers: json })).toEqual({
      status: 422,
      message: 'Forbidden key in JSON body',
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
