import { describe, expect, it } from '@jest/globals';
import * as z from 'zod';
import { closestName, parseInput } from '../../lib/http/validation.js';

describe('request validation messages', () => {
  const schema = z.strictObject({
    recipientHashedPan: z.string().optional(),
    receiptId: z.uuid({ message: 'must be a UUID string' }),
    items: z.array(z.strictObject({ name: z.string() })).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  });

  it('suggests the known name closest to a misspelt one', () => {
    const known = ['recipientHashedPan', 'receiptId', 'logoUrl'];
    expect(closestName('recipientHashedPAN', known)).toBe('recipientHashedPan');
    expect(closestName('recieptId', known)).toBe('receiptId');
    expect(closestName('logo', known)).toBe('logoUrl');
    expect(closestName('colour', known)).toBeUndefined();
  });

  it('reports a missing field as required even when its schema has its own message', () => {
    expect(parseInput(schema, {})).toEqual({
      success: false,
      fields: [{ field: 'receiptId', message: 'is required' }],
    });
    expect(parseInput(schema, { receiptId: 'nope' })).toEqual({
      success: false,
      fields: [{ field: 'receiptId', message: 'must be a UUID string' }],
    });
  });

  it('names each unknown field at its own path and leaves records free-form', () => {
    const result = parseInput(schema, {
      receiptId: crypto.randomUUID(),
      recipientHashedPAN: 'x',
      items: [{ name: 'a', nmae: 'b' }],
      metadata: { anything: 1 },
    });
    expect(result).toEqual({
      success: false,
      fields: expect.arrayContaining([
        { field: 'recipientHashedPAN', message: 'is not a known field; did you mean "recipientHashedPan"?' },
        { field: 'items.0.nmae', message: 'is not a known field; did you mean "name"?' },
      ]),
    });
  });

  it('names the whole body when it is not an object', () => {
    expect(parseInput(schema, 'text')).toEqual({
      success: false,
      fields: [{ field: '(body)', message: expect.any(String) }],
    });
  });
});
