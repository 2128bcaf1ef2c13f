import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ContractValidator, ContractViolationError, type ContractReply } from '../support/contract.js';

/** The contract checker itself: a checker that accepts everything would make every other test vacuous. */
const validator = new ContractValidator();

const platformHeaders = (extra: Record<string, string> = {}) =>
  new Headers({
    'Content-Type': 'application/json',
    'X-Request-Id': randomUUID(),
    'X-RateLimit-Limit': '60',
    'X-RateLimit-Remaining': '59',
    'X-RateLimit-Reset': '1800000000',
    'Cache-Control': 'no-store',
    ...extra,
  });

const reply = (overrides: Partial<ContractReply> & { json: unknown }): ContractReply => ({
  method: 'POST',
  path: '/api/v1/keys/grant-access',
  status: 200,
  headers: platformHeaders(),
  text: JSON.stringify(overrides.json),
  ...overrides,
});

const errorBody = (code: string) => ({
  success: false,
  error: { code, message: 'nope', timestamp: new Date().toISOString(), request_id: randomUUID() },
});

const token = () => ({
  tokenId: randomUUID(),
  userId: randomUUID(),
  keyId: randomUUID(),
  purpose: 'decrypt',
  grantedAt: '2026-11-22T01:00:00.000Z',
  expiresAt: '2026-11-22T01:03:00.000Z',
  sourceIp: '127.0.0.1',
});

describe('the contract validator', () => {
  it('accepts a conforming success and a conforming error', () => {
    expect(validator.check(reply({ json: { success: true, data: token() } }))).toEqual([]);
    const refused = reply({ status: 403, json: errorBody('GRANT_ERROR') });
    expect(validator.check(refused)).toEqual([]);
  });

  it('rejects a status the operation does not declare', () => {
    const problems = validator.check(reply({ status: 402, json: errorBody('PAYMENT_DECLINED') }));
    expect(problems).toEqual([
      expect.stringContaining('status 402 is not declared for POST /api/v1/keys/grant-access'),
    ]);
  });

  it('rejects a body with a leaked field, a missing field or a wrong type', () => {
    const { sourceIp: _sourceIp, ...withoutIp } = token();
    expect(
      validator.check(reply({ json: { success: true, data: { ...token(), clientId: 'x' } } })).join('\n'),
    ).toContain("'clientId'");
    expect(validator.check(reply({ json: { success: true, data: withoutIp } })).join('\n')).toContain(
      'sourceIp',
    );
    expect(
      validator.check(reply({ json: { success: true, data: { ...token(), expiresAt: 'soon' } } })).join('\n'),
    ).toContain('date-time');
  });

  it('rejects an error code that the status does not carry', () => {
    const problems = validator.check(reply({ status: 403, json: errorBody('DECRYPTION_ERROR') }));
    expect(problems.join('\n')).toContain('/error/code must be equal to one of the allowed values');
  });

  it('rejects a response without X-Request-Id or the rate-limit headers, or with malformed ones', () => {
    const headers = platformHeaders();
    headers.delete('X-Request-Id');
    headers.delete('X-RateLimit-Reset');
    const problems = validator.check(reply({ headers, json: { success: true, data: token() } }));
    expect(problems).toEqual([
      'header X-Request-Id is declared required but missing',
      'header X-RateLimit-Reset is declared required but missing',
    ]);
    const bad = validator.check(
      reply({
        headers: platformHeaders({ 'X-RateLimit-Remaining': 'lots' }),
        json: { success: true, data: token() },
      }),
    );
    expect(bad).toEqual([expect.stringContaining('header X-RateLimit-Remaining')]);
  });

  it('requires Retry-After on 429 and Allow on 405', () => {
    expect(validator.check(reply({ status: 429, json: errorBody('rate_limit_exceeded') }))).toEqual([
      'header Retry-After is declared required but missing',
    ]);
    const wrongMethod = reply({ method: 'GET', status: 405, json: errorBody('method_not_allowed') });
    expect(validator.check(wrongMethod)).toEqual(['header Allow is declared required but missing']);
    expect(validator.check({ ...wrongMethod, headers: platformHeaders({ Allow: 'POST' }) })).toEqual([]);
  });

  it('matches path parameters and lets unknown paths answer only the catch-all statuses', () => {
    const transaction = reply({
      method: 'GET',
      path: `/api/v1/transactions/${randomUUID()}`,
      status: 404,
      json: errorBody('not_found'),
    });
    expect(validator.check(transaction)).toEqual([]);
    const unknown = reply({
      method: 'GET',
      path: '/api/v1/nothing-here?x=1',
      status: 404,
      json: errorBody('not_found'),
    });
    expect(validator.check(unknown)).toEqual([]);
    expect(validator.check({ ...unknown, status: 200, json: { success: true, data: {} } })).toEqual([
      expect.stringContaining('status 200 is not declared for no documented path'),
    ]);
  });

  it('rejects a body that is not JSON or not sent as JSON', () => {
    const text = reply({
      json: undefined,
      text: 'oops',
      headers: platformHeaders({ 'Content-Type': 'text/plain' }),
    });
    expect(validator.check(text)).toEqual([
      'content-type is "text/plain", declared application/json',
      'body is not JSON: "oops"',
    ]);
  });

  it('throws on a violation, naming method, path, status and the schema error, and records it', () => {
    const before = validator.violations.length;
    const bad = reply({ json: { success: true, data: { ...token(), purpose: 'sign' } } });
    expect(() => validator.assert(bad)).toThrow(ContractViolationError);
    expect(() => validator.assert(bad)).toThrow(
      /POST \/api\/v1\/keys\/grant-access → 200[\s\S]*\/data\/purpose must be equal to one of the allowed values/,
    );
    expect(validator.violations.length).toBe(before + 2);
  });
});
