import { describe, expect, it } from '@jest/globals';
import { App, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import { resolveSettings, SettingsError } from '../../infra/settings.js';
import { tracingActive } from '../../lib/wiring/aws-observability.js';
import { resourcesOf, sharedTemplate } from './support.js';
import { synthVariant } from './variants.js';

/*
 * The stage's `tracing` setting (docs/DEPLOY.md, docs/PERFORMANCE.md): `sdk` (the default, every
 * function traced with the Powertools Tracer), `lambda` (Lambda's and API Gateway's tracing, no Tracer
 * in the functions) or `off`.
 */

const functions = (template: Template) => Object.values(resourcesOf(template, 'AWS::Lambda::Function'));
const modes = (template: Template) =>
  new Set(functions(template).map((fn) => JSON.stringify(fn.Properties.TracingConfig)));
const traceEnabled = (template: Template) =>
  new Set(
    functions(template).map(
      (fn) =>
        (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables
          .POWERTOOLS_TRACE_ENABLED,
    ),
  );
const stageTracing = (template: Template) =>
  Object.values(resourcesOf(template, 'AWS::ApiGateway::Stage')).map(
    (stage) => stage.Properties.TracingEnabled,
  );
const xrayPolicies = (template: Template) =>
  Object.values(resourcesOf(template, 'AWS::IAM::Policy')).filter((policy) =>
    JSON.stringify(policy.Properties.PolicyDocument).includes('xray:PutTraceSegments'),
  );

describe('the stage tracing setting', () => {
  it('defaults to sdk: every function active with the Tracer free to load, the API stage traced', () => {
    const template = sharedTemplate();
    expect(modes(template)).toEqual(new Set(['{"Mode":"Active"}']));
    expect(traceEnabled(template)).toEqual(new Set([undefined]));
    expect(stageTracing(template)).toEqual([true]);
    expect(xrayPolicies(template)).toHaveLength(1);
  });

  it('lambda: active tracing, the Tracer told off in every function', () => {
    const template = synthVariant({ settings: { tracing: 'lambda' } }).templates.template;
    expect(modes(template)).toEqual(new Set(['{"Mode":"Active"}']));
    expect(traceEnabled(template)).toEqual(new Set(['false']));
    expect(stageTracing(template)).toEqual([true]);
    expect(xrayPolicies(template)).toHaveLength(1);
    // What the functions read it with: the X-Ray daemon is there, the Tracer still stays unloaded.
    const lambdaEnv = { AWS_LAMBDA_FUNCTION_NAME: 'f', AWS_XRAY_DAEMON_ADDRESS: '169.254.79.129:2000' };
    expect(tracingActive(lambdaEnv)).toBe(true);
    expect(tracingActive({ ...lambdaEnv, POWERTOOLS_TRACE_ENABLED: 'false' })).toBe(false);
  });

  it('off: pass-through, no X-Ray write policy, the API stage untraced', () => {
    const template = synthVariant({ settings: { tracing: 'off' } }).templates.template;
    expect(modes(template)).toEqual(new Set(['{"Mode":"PassThrough"}']));
    expect(stageTracing(template)).toEqual([false]);
    expect(xrayPolicies(template)).toEqual([]);
    expect(JSON.stringify(template.toJSON())).not.toContain('xray:');
  });

  it('takes the context form and refuses anything else', () => {
    const settingsFrom = (context: Record<string, unknown>) =>
      resolveSettings(new Stack(new App({ context }), 'S'));
    expect(settingsFrom({ tracing: 'lambda' }).tracing).toBe('lambda');
    expect(() => settingsFrom({ tracing: 'partial' })).toThrow(SettingsError);
  });
});
