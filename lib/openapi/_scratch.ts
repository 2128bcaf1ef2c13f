import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { flattenedEncryptBody, nestedEncryptBody } from '../../functions/encrypt-receipt/schema.js';
import { createPaymentBody, createPaymentPath } from '../../functions/create-payment/schema.js';

const registry = new OpenAPIRegistry();
const Addr = z.object({ a: z.string().optional() }).meta({ id: 'Addr', description: 'addr' });
const Outer = z.object({ addr: Addr.optional(), d: z.string().default('x'), b: z.enum(['a','b']).transform((v) => v.toUpperCase()) });
registry.registerPath({
  method: 'post',
  path: '/x/{gateway}',
  request: { params: createPaymentPath, body: { content: { 'application/json': { schema: z.union([nestedEncryptBody, flattenedEncryptBody]) } } } },
  responses: { 200: { description: 'ok', content: { 'application/json': { schema: Outer } } } },
});
registry.registerPath({
  method: 'post',
  path: '/y',
  request: { body: { content: { 'application/json': { schema: createPaymentBody } } } },
  responses: { 200: { description: 'ok', content: { 'application/json': { schema: z.strictObject({ a: z.literal(true), n: z.string().nullable() }) } } } },
});
const doc = new OpenApiGeneratorV31(registry.definitions, { unionPreferredType: 'oneOf' }).generateDocument({ openapi: '3.1.0', info: { title: 't', version: '1' } });
console.log(JSON.stringify(doc, null, 1).slice(0, 9000));
