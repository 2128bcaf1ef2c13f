import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { newApiKeyRecord } from '../../lib/api-keys/authenticator.js';
import { createLogger, REDACTED, redactEverywhere } from '../../lib/kernel/log.js';
import { captureLogs, type LogCapture } from '../support/logs.js';

/**
 * Every secret shape the service handles, logged through the service's own Powertools Logger under a
 * field name no name-based rule knows, inside messages and inside an error's text: none may reach the
 * output, while the ids the service must go on logging come through untouched.
 */

const der = (type: 'rsa' | 'ec', part: 'private' | 'public'): Buffer => {
  const pair =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return part === 'private'
    ? pair.privateKey.export({ format: 'der', type: 'pkcs8' })
    : pair.publicKey.export({ format: 'der', type: 'spki' });
};
const wrapped = (base64: string) => base64.replace(/(.{64})/g, '$1\n');
const hex64 = () => createHash('sha256').update(randomBytes(16)).digest('hex');
const base64url32 = () => randomBytes(32).toString('base64url');
const { apiKey } = newApiKeyRecord({ name: 'redaction', roles: ['merchant'], tier: 'free' }, new Date());
const tokenId = randomUUID();
redactEverywhere(tokenId);

const secrets: Record<string, string> = {
  'RSA private key, base64 DER': der('rsa', 'private').toString('base64'),
  'RSA private key, base64url DER': der('rsa', 'private').toString('base64url'),
  'RSA private key, line-wrapped base64 DER': wrapped(der('rsa', 'private').toString('base64')),
  'P-256 private key, base64 DER': der('ec', 'private').toString('base64'),
  'RSA public key, base64 DER': der('rsa', 'public').toString('base64'),
  'P-256 public key, base64 DER': der('ec', 'public').toString('base64'),
  'API key as issued today': apiKey,
  'production API key': `rk_live_${randomBytes(16).toString('hex')}_${base64url32()}`,
  'staging API key': `rk_test_${randomBytes(16).toString('hex')}_${base64url32()}`,
  'local API key': `rk_local_${base64url32()}`,
  'hashedPan, lower-case hex': hex64(),
  'hashedPan, upper-case hex': hex64().toUpperCase(),
  'token id (UUID-shaped, known by value)': tokenId,
  'token id in upper case': tokenId.toUpperCase(),
};

/** Ids the service logs on purpose: none has a secret's shape. */
const kept: Record<string, string> = {
  'request id': randomUUID(),
  'receipt id': randomUUID(),
  'API key id (32 hex)': randomBytes(16).toString('hex'),
  'API Gateway request id': 'c6af9ac6-7b61-11e6-9a41-93e8deadbeef',
  'X-Ray trace id': 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
  'ISO timestamp': '2026-11-22T14:25:08.123Z',
  'source path': '/var/task/node_modules/@aws-sdk/client-dynamodb/dist-cjs/index.js:1:2345',
  'route name': 'payments-gateway_a-create',
  'sentence about a token': 'the access token was refused: token_expired',
};

type LogLine = Record<string, unknown>;

describe('log redaction by value', () => {
  let logs: LogCapture;
  const logger = createLogger({ level: 'DEBUG', serviceName: 'redaction-test' });
  const lines = (): LogLine[] =>
    logs
      .text()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);

  beforeEach(() => {
    logs = captureLogs();
  });
  afterEach(() => logs.restore());

  it.each(Object.entries(secrets))('redacts a %s under an unexpected field name', (_label, secret) => {
    logger.info('diagnostic', { note: secret, nested: { list: ['x', secret] } });
    logger.warn(`could not use ${secret} for this request`);
    logger.error('lookup failed', new Error(`no record matches ${secret}`));
    logger.appendKeys({ carried: secret });
    logger.debug('with a persistent key');
    logger.removeKeys(['carried']);

    const text = logs.text();
    expect(lines()).toHaveLength(4);
    // A secret split across lines by wrapping must not leak even one whole line of it.
    for (const piece of secret.split('\n')) expect(text).not.toContain(piece);
    expect(text.split(REDACTED).length - 1).toBeGreaterThanOrEqual(5);
  });

  it('keeps every id the service must log, in fields and in messages', () => {
    logger.info('request', { ...kept });
    logger.info(`handled ${Object.values(kept).join(' and ')}`);

    const [fields, message] = lines();
    expect(fields).toMatchObject(kept);
    for (const value of Object.values(kept)) expect(message!.message).toContain(value);
    expect(logs.text()).not.toContain(REDACTED);
  });

  it('redacts the secret and nothing around it', () => {
    const requestId = randomUUID();
    logger.info(`request ${requestId} sent ${tokenId} and ${secrets['hashedPan, lower-case hex']}`);

    expect(lines()[0]!.message).toBe(`request ${requestId} sent ${REDACTED} and ${REDACTED}`);
  });
});
