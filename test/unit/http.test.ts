import { describe, expect, it } from '@jest/globals';
import {
  DecryptionError,
  InvalidRequestError,
  RateLimitExceededError,
  ServiceUnavailableError,
} from '../../lib/kernel/errors.js';
import { EncryptionError } from '../../lib/receipts/vocabulary.js';
import { errorResponse } from '../../lib/http/error-envelope.js';
import { REDACTED, redactingReplacer } from '../../lib/kernel/log.js';

const now = new Date('2026-11-22T00:00:00Z');
const bodyOf = (response: { body: string }) =>
  JSON.parse(response.body) as { success: boolean; error: Record<string, unknown> };

describe('error envelope', () => {
  it('renders a named error with its status, code, details and the request identity', () => {
    const response = errorResponse(
      new InvalidRequestError('Invalid request body', [{ field: 'x', message: 'bad' }]),
      'req-1',
      now,
    );
    expect(response.statusCode).toBe(400);
    expect(bodyOf(response)).toEqual({
      success: false,
      error: {
        code: 'INVALID_REQUEST',
        message: 'Invalid request body',
        details: { fields: [{ field: 'x', message: 'bad' }] },
        timestamp: now.toISOString(),
        request_id: 'req-1',
      },
    });
  });

  it('keeps a decryption failure reason out of the body', () => {
    const text = errorResponse(new DecryptionError('access token expired'), 'r', now).body;
    expect(text).not.toContain('expired');
    expect(bodyOf({ body: text }).error.code).toBe('DECRYPTION_ERROR');
  });

  it('hides everything about an unexpected error behind a generic 500', () => {
    const response = errorResponse(new TypeError('secret internals at /var/task/index.js:1'), 'r', now);
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('secret internals');
    expect(bodyOf(response).error).toMatchObject({
      code: 'internal_server_error',
      message: 'Internal server error',
    });
  });

  it('keeps named 500s to their code and fixed message, and 503 details', () => {
    expect(bodyOf(errorResponse(new EncryptionError(), 'r', now)).error).not.toHaveProperty('details');
    expect(
      bodyOf(errorResponse(new ServiceUnavailableError('down', { dynamodb: 'down' }), 'r', now)).error
        .details,
    ).toEqual({ dynamodb: 'down' });
  });

  it('maps Middy body-parser errors to 415 and 400', () => {
    expect(
      errorResponse(Object.assign(new Error('Unsupported Media Type'), { statusCode: 415 }), 'r', now)
        .statusCode,
    ).toBe(415);
    const malformed = errorResponse(
      Object.assign(new Error('Invalid or malformed JSON was provided'), { statusCode: 422 }),
      'r',
      now,
    );
    expect([malformed.statusCode, bodyOf(malformed).error.code]).toEqual([400, 'INVALID_REQUEST']);
  });

  it('adds Retry-After to a 429', () => {
    expect(errorResponse(new RateLimitExceededError(2.2), 'r', now).headers['Retry-After']).toBe('3');
  });
});

describe('log redaction', () => {
  const render = (value: unknown) => JSON.stringify(value, redactingReplacer);

  it('redacts secrets by key name at any depth', () => {
    const text = render({
      body: { privateKey: 'MIIE', accessTokenId: 't', nested: { hashedPan: 'abc', apiKey: 'k' } },
      headers: { 'x-api-key': 'k' },
    });
    for (const secret of ['MIIE', '"t"', 'abc', '"k"']) expect(text).not.toContain(secret);
    expect(text).toContain(REDACTED);
  });

  it('redacts API-key-shaped and PEM private-key-shaped strings under innocent names', () => {
    const apiKey = `rk_${'a'.repeat(32)}_${'B'.repeat(43)}`;
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIEvQ\n-----END PRIVATE KEY-----';
    const text = render({ message: `failed for ${apiKey}`, detail: pem });
    expect(text).not.toContain(apiKey);
    expect(text).not.toContain('MIIEvQ');
  });

  it('leaves ordinary fields alone', () => {
    expect(render({ requestId: 'r-1', status: 200 })).toBe('{"requestId":"r-1","status":200}');
  });
});

describe('dependency outages', () => {
  it.each([
    [
      'a refused connection',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' }),
    ],
    [
      'a wrapped socket error',
      new Error('AWS SDK error wrapper for Error: connect ECONNREFUSED 127.0.0.1:1'),
    ],
    [
      'DynamoDB throttling',
      Object.assign(new Error('slow down'), { name: 'ProvisionedThroughputExceededException' }),
    ],
    ['an AWS server fault', Object.assign(new Error('oops'), { $fault: 'server' })],
  ])('answers %s with 503 service_unavailable and Retry-After', (_name, error) => {
    const response = errorResponse(error, 'r', now);
    expect([response.statusCode, bodyOf(response).error.code, response.headers['Retry-After']]).toEqual([
      503,
      'service_unavailable',
      '1',
    ]);
  });

  it('keeps a client-side AWS error a 500', () => {
    const response = errorResponse(
      Object.assign(new Error('bad'), { name: 'ValidationException', $fault: 'client' }),
      'r',
      now,
    );
    expect(response.statusCode).toBe(500);
  });
});
