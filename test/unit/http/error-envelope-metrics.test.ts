import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Metrics } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as cryptoErrors from '../../../lib/crypto/errors.js';
import type { ServiceContext } from '../../../lib/http/context.js';
import { errorEnvelope } from '../../../lib/http/error-envelope-middleware.js';
import { observability } from '../../../lib/http/observability-middleware.js';
import { ManualClock } from '../../../lib/kernel/clock.js';
import { GrantForbiddenError, GrantLimitError } from '../../../lib/access/vocabulary.js';
import { DecryptionError, InvalidRequestError, NotFoundError } from '../../../lib/kernel/errors.js';
import { createLogger } from '../../../lib/kernel/log.js';
import { PowertoolsTelemetry } from '../../../lib/wiring/aws-observability.js';
import { captureLogs, type LogCapture } from '../../support/logs.js';

/**
 * The DECRYPTION_ERROR and GRANT_ERROR alarms (infra/monitoring.ts) read metrics the error envelope
 * counts, whichever endpoint answers: here the envelope and the observability middleware run in the
 * order lib/http/pipeline.ts gives them, over Powertools Metrics, and the CloudWatch embedded metric
 * format lines they write are read back.
 */
interface EmfLine {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  [field: string]: unknown;
}

const lambdaContext = {
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'receipt-service-test-decrypt-receipt',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:receipt-service-test-decrypt-receipt',
  memoryLimitInMB: '512',
  awsRequestId: '7d0c6a0e-52a4-4f0c-9a57-0b7e2f1c3d4e',
  logGroupName: '/aws/lambda/receipt-service-test-decrypt-receipt',
  logStreamName: 'stream',
  getRemainingTimeInMillis: () => 10_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
} satisfies ServiceContext;

describe('error answers counted for the alarms (CloudWatch EMF)', () => {
  let logs: LogCapture;
  const logger = createLogger({ level: 'WARN', serviceName: 'receipt-service' });

  /** One invocation of an endpoint that throws `error`, through the pipeline's error handling. */
  const answer = async (error: Error) => {
    const telemetry = new PowertoolsTelemetry(
      new Metrics({ namespace: 'ReceiptService/test', serviceName: 'receipt-service', logger }),
      logger,
    );
    const handler = middy<APIGatewayProxyEvent, APIGatewayProxyResult, Error, ServiceContext>(() =>
      Promise.reject(error),
    )
      .use(observability({ logger, telemetry }))
      .use(errorEnvelope({ clock: new ManualClock(Date.UTC(2026, 10, 28)), logger, telemetry }));
    return handler({} as APIGatewayProxyEvent, { ...lambdaContext });
  };
  const emf = () =>
    logs
      .text()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as EmfLine | Record<string, unknown>)
      .filter((line): line is EmfLine => '_aws' in line);
  const codeOf = (response: APIGatewayProxyResult) =>
    (JSON.parse(response.body) as { error: { code: string } }).error.code;

  beforeEach(() => {
    logs = captureLogs();
  });
  afterEach(() => logs.restore());

  it.each([
    ['a refused decryption', () => new DecryptionError('token expired'), 403, 'DecryptionErrorAnswers'],
    [
      "the crypto module's own decryption failure",
      () => new cryptoErrors.DecryptionError('tag mismatch'),
      403,
      'DecryptionErrorAnswers',
    ],
    ['a grant refused with 403', () => new GrantForbiddenError(), 403, 'GrantErrorAnswers'],
    ['a grant refused at the token limit', () => new GrantLimitError(60, 5), 429, 'GrantErrorAnswers'],
  ])('counts %s once, in the namespace and service an alarm reads', async (_, error, status, metric) => {
    const response = await answer(error());

    expect(response.statusCode).toBe(status);
    expect(emf()).toHaveLength(1);
    const [line] = emf();
    expect(line!._aws.CloudWatchMetrics).toEqual([
      {
        Namespace: 'ReceiptService/test',
        Dimensions: [['service']],
        Metrics: [{ Name: metric, Unit: 'Count' }],
      },
    ]);
    expect(line).toMatchObject({ service: 'receipt-service', [metric]: 1 });
    // The answer itself is the usual envelope: the count adds nothing to it.
    expect(codeOf(response)).toBe(metric === 'GrantErrorAnswers' ? 'GRANT_ERROR' : 'DECRYPTION_ERROR');
  });

  it.each([
    ['an invalid request', () => new InvalidRequestError('Invalid request body', [])],
    ['a not found', () => new NotFoundError('Receipt not found')],
    ['an unexpected error', () => new TypeError('boom')],
  ])('counts no other answer: %s', async (_, error) => {
    const response = await answer(error());
    expect(response.statusCode).toBeGreaterThanOrEqual(400);
    expect(emf()).toEqual([]);
  });
});
