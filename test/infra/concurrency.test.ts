import { describe, expect, it } from '@jest/globals';
import { App, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { routes } from '../../functions/routes.js';
import { dispatchStream } from '../../functions/webhooks/webhook-dispatch/function.js';
import {
  defaultPaymentReservedConcurrency,
  paymentFunctionNames,
  resolveSettings,
  SettingsError,
  type SettingsInput,
} from '../../infra/settings.js';
import { functionByName, resourcesOf, sharedTemplate } from './support.js';
import { synthVariant } from './variants.js';

/*
 * Issue 40, docs/SCALE.md: the receipts stream's mapping drains a shard with several batches at once,
 * and the payment functions keep executions of their own, a setting per stage (docs/DEPLOY.md).
 */

const settingsFrom = (context: Record<string, unknown>, overrides?: SettingsInput) =>
  resolveSettings(new Stack(new App({ context }), 'S'), overrides);

/** Each function's ReservedConcurrentExecutions, by name, for those that have one. */
const reservedIn = (template: Template, prefix: string): Record<string, unknown> =>
  Object.fromEntries(
    Object.values(resourcesOf(template, 'AWS::Lambda::Function'))
      .filter((fn) => fn.Properties.ReservedConcurrentExecutions !== undefined)
      .map((fn) => [
        String(fn.Properties.FunctionName).replace(`${prefix}-`, ''),
        fn.Properties.ReservedConcurrentExecutions,
      ]),
  );

describe('the receipts stream mapping', () => {
  it('processes four batches of 25 per shard at once, bisecting, retrying and partially failing as before', () => {
    const mappings = Object.values(resourcesOf(sharedTemplate(), 'AWS::Lambda::EventSourceMapping'));
    const stream = mappings.find((each) =>
      JSON.stringify(each.Properties.EventSourceArn).includes('StreamArn'),
    );
    expect(dispatchStream).toMatchObject({ batchSize: 25, parallelizationFactor: 4, retryAttempts: 5 });
    expect(stream?.Properties).toMatchObject({
      BatchSize: 25,
      ParallelizationFactor: 4,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 24 * 3_600,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      StartingPosition: 'TRIM_HORIZON',
    });
  });
});

describe('reserved concurrency of the payment functions', () => {
  it('names payment routes only', () => {
    const names = new Set(routes.map((route) => route.name));
    for (const name of paymentFunctionNames) expect([name, names.has(name)]).toEqual([name, true]);
    for (const name of paymentFunctionNames)
      expect(routes.find((route) => route.name === name)?.entry).toMatch(/^functions\/payments\//);
  });

  it('reserves nothing on a stage that is not production unless asked', () => {
    expect(reservedIn(sharedTemplate(), 'receipt-service-test')).toEqual({});
    expect(settingsFrom({ stage: 'staging' }).paymentReservedConcurrency).toEqual({});
  });

  it('reserves the documented defaults on a production stage, and nothing for any other function', () => {
    const prod = synthVariant({ settings: { stage: 'prod' } }).templates.template;
    expect(reservedIn(prod, 'receipt-service-prod')).toEqual({
      'create-payment': 150,
      'create-refund': 20,
      'gateway-events': 30,
    });
    expect(defaultPaymentReservedConcurrency).toEqual({
      'create-payment': 150,
      'create-refund': 20,
      'gateway-events': 30,
    });
    expect(functionByName(prod, 'receipt-service-prod-encrypt-receipt')[1].Properties).not.toHaveProperty(
      'ReservedConcurrentExecutions',
    );
  });

  it('takes the stage setting from `-c` as JSON, props over context, and `{}` for none', () => {
    expect(
      settingsFrom({ stage: 'staging', paymentReservedConcurrency: '{"create-payment":40}' })
        .paymentReservedConcurrency,
    ).toEqual({ 'create-payment': 40 });
    expect(
      settingsFrom({ stage: 'prod', paymentReservedConcurrency: '{}' }).paymentReservedConcurrency,
    ).toEqual({});
    expect(
      settingsFrom(
        { stage: 'prod', paymentReservedConcurrency: '{"create-payment":40}' },
        { paymentReservedConcurrency: { 'gateway-events': 12 } },
      ).paymentReservedConcurrency,
    ).toEqual({ 'gateway-events': 12 });
  });

  it('fails the synth for a function that is not a payment function, or a count that is not a positive integer', () => {
    for (const value of [
      '{"encrypt-receipt":10}',
      '{"create-payment":0}',
      '{"create-payment":1.5}',
      '[10]',
    ]) {
      const refused = (() => {
        try {
          settingsFrom({ paymentReservedConcurrency: value });
          return undefined;
        } catch (error) {
          return error;
        }
      })();
      expect(refused).toBeInstanceOf(SettingsError);
      expect([value, (refused as Error).message]).toEqual([
        value,
        expect.stringContaining('paymentReservedConcurrency'),
      ]);
    }
  });
});
