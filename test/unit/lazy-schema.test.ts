import { describe, expect, it } from '@jest/globals';
import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import * as z from 'zod';
import { lazySchema } from '../../lib/kernel/lazy-schema.js';
import { parseInput } from '../../lib/http/validation.js';

describe('lazySchema', () => {
  it('builds the schema on first use, once, and not when it is declared', () => {
    let builds = 0;
    const schema = lazySchema(() => {
      builds += 1;
      return z.strictObject({ id: z.uuid(), count: z.number().int().min(1) });
    });
    const parent = lazySchema(() => z.strictObject({ child: schema.optional() }));
    expect(builds).toBe(0);
    expect(parent.safeParse({}).success).toBe(true);
    expect(schema.safeParse({ id: '7c9e6679-7425-40de-944b-e07fc1f90ae7', count: 2 }).success).toBe(true);
    expect(Object.keys(schema.shape)).toEqual(['id', 'count']);
    expect(builds).toBe(1);
  });

  it('parses and refuses exactly as the schema it builds, field messages included', () => {
    const make = () => z.strictObject({ id: z.uuid({ message: 'must be a UUID string' }), n: z.number() });
    const input = { id: 'x', n: 'y', extra: true };
    expect(parseInput(lazySchema(make), input)).toEqual(parseInput(make(), input));
  });

  it('is the built schema to zod and to the OpenAPI generator: its class, its metadata, its component', () => {
    const make = () => z.string().min(2).meta({ id: 'LazyProbe', description: 'probe' });
    const schema = lazySchema(make);
    expect(schema).toBeInstanceOf(z.ZodString);
    expect(schema.meta()).toEqual({ id: 'LazyProbe', description: 'probe' });
    // As lib/openapi/document.ts registers routes: a path whose response holds the schema.
    const components = (probe: z.ZodType) => {
      const registry = new OpenAPIRegistry();
      registry.registerPath({
        method: 'get',
        path: '/probe',
        responses: {
          200: {
            description: 'probe',
            content: { 'application/json': { schema: z.strictObject({ probe }) } },
          },
        },
      });
      return new OpenApiGeneratorV31(registry.definitions).generateDocument({
        openapi: '3.1.0',
        info: { title: 'probe', version: '1' },
      });
    };
    expect(components(schema)).toEqual(components(make()));
    expect(JSON.stringify(components(schema))).toContain('"$ref":"#/components/schemas/LazyProbe"');
  });
});
