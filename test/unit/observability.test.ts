import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Metrics } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import { observability } from '../../lib/http/observability-middleware.js';
import { createLogger } from '../../lib/kernel/log.js';
import { PowertoolsTelemetry } from '../../lib/wiring/aws-observability.js';
import { captureLogs, type LogCapture } from '../support/logs.js';

/** The CloudWatch embedded metric format, as far as these tests read it. */
interface EmfLine {
  _aws: {
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [field: string]: unknown;
}

const lambdaContext: Context = {
  callbackWaitsForEmptyEventLoop: false,
  functionName: 'receipt-service-decrypt',
  functionVersion: '$LATEST',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:receipt-service-decrypt',
  memoryLimitInMB: '512',
  awsRequestId: 'f3a1b2c4-0d5e-4f60-8a7b-9c0d1e2f3a4b',
  logGroupName: '/aws/lambda/receipt-service-decrypt',
  logStreamName: 'stream',
  getRemainingTimeInMillis: () => 10_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

describe('telemetry on Powertools Metrics (CloudWatch EMF)', () => {
  let logs: LogCapture;
  const logger = createLogger({ level: 'WARN', serviceName: 'metrics-test' });
  const telemetry = () =>
    new PowertoolsTelemetry(
      new Metrics({ namespace: 'ReceiptServiceTest', serviceName: 'metrics-test', logger }),
      logger,
    );
  const output = () =>
    logs
      .text()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as EmfLine | Record<string, unknown>);
  const emf = () => output().filter((line): line is EmfLine => '_aws' in line);

  beforeEach(() => {
    logs = captureLogs();
  });
  afterEach(() => logs.restore());

  it('publishes a plain count at the end of the invocation, in the service namespace', () => {
    const counter = telemetry();
    counter.count('ReceiptsEncrypted');
    counter.count('ReceiptsEncrypted');
    expect(emf()).toHaveLength(0);

    counter.flush();

    const [line] = emf();
    expect(emf()).toHaveLength(1);
    expect(line!._aws.CloudWatchMetrics[0]).toMatchObject({
      Namespace: 'ReceiptServiceTest',
      Metrics: [{ Name: 'ReceiptsEncrypted', Unit: 'Count' }],
    });
    // Two samples of 1 in one line: CloudWatch's Sum for the minute is 2.
    expect(line!.ReceiptsEncrypted).toEqual([1, 1]);
    expect(line!.service).toBe('metrics-test');
  });

  it('publishes a count with dimensions as its own metric, in total and split by its dimensions', () => {
    const counter = telemetry();
    counter.count('DecryptRefusals', { reason: 'token_expired' });
    counter.count('PaymentFailures', { gateway: 'gateway_b', outcome: 'declined' });

    const [refusal, failure] = emf();
    // The service alone gives the total an alarm watches; the split says why.
    expect(refusal!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([['service'], ['service', 'reason']]);
    expect(failure!._aws.CloudWatchMetrics[0]!.Dimensions).toEqual([
      ['service'],
      ['service', 'gateway', 'outcome'],
    ]);
    expect(refusal).toMatchObject({ reason: 'token_expired', DecryptRefusals: 1 });
    expect(failure).toMatchObject({ gateway: 'gateway_b', outcome: 'declined', PaymentFailures: 1 });
  });

  it('writes nothing, not even a warning, for an invocation that counted nothing', () => {
    telemetry().flush();
    expect(logs.text()).toBe('');
  });

  it('puts the Lambda context on log lines and publishes the counts of an invocation that failed', async () => {
    const counter = telemetry();
    const handler = middy(async () => {
      logger.warn('inside the handler');
      counter.count('GrantLimitRefusals');
      throw new Error('refused');
    }).use(observability({ logger, telemetry: counter }));

    await expect(handler({}, lambdaContext)).rejects.toThrow('refused');

    const logged = output().find((line) => line.message === 'inside the handler');
    expect(logged).toMatchObject({
      function_name: lambdaContext.functionName,
      function_request_id: lambdaContext.awsRequestId,
    });
    expect(emf()).toEqual([expect.objectContaining({ GrantLimitRefusals: 1 })]);
  });
});
