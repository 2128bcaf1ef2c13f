import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Template } from 'aws-cdk-lib/assertions';
import { defaultProjectRoot, ReceiptServiceStack } from '../../infra/receipt-service-stack.js';
import type { SettingsInput } from '../../infra/settings.js';
import { ServiceFunction } from '../../infra/service-function.js';
import { findRoute, type RouteName } from '../../functions/routes.js';

/** The feature flags `cdk synth` runs with, so the tests see the same template. */
export const cdkJsonContext = (): Record<string, unknown> =>
  (
    JSON.parse(readFileSync(join(defaultProjectRoot, 'cdk.json'), 'utf8')) as {
      context: Record<string, unknown>;
    }
  ).context;

export interface SynthOptions {
  settings?: SettingsInput;
  context?: Record<string, unknown>;
}

/**
 * Synthesizes the stack without running esbuild for each function (`aws:cdk:bundling-stacks` = []):
 * the assertions here are about the template; test/infra/bundling.test.ts bundles for real.
 */
export function synth(options: SynthOptions = {}): {
  app: App;
  stack: ReceiptServiceStack;
  template: Template;
} {
  const app = new App({
    context: { ...cdkJsonContext(), ...options.context, 'aws:cdk:bundling-stacks': [] },
  });
  const stack = new ReceiptServiceStack(app, 'ReceiptServiceTest', {
    settings: { stage: 'test', ...options.settings },
  });
  return { app, stack, template: Template.fromStack(stack) };
}

export type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  DependsOn?: string[];
};

export const resourcesOf = (template: Template, type: string): Record<string, Resource> =>
  template.findResources(type) as Record<string, Resource>;

export interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
}

export const asArray = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** `{ Ref: X }` or `{ Fn::GetAtt: [X, ...] }` → X. */
export function referencedId(value: unknown): string | undefined {
  if (value && typeof value === 'object') {
    const ref = (value as { Ref?: unknown }).Ref;
    if (typeof ref === 'string') return ref;
    const getAtt = (value as { 'Fn::GetAtt'?: unknown })['Fn::GetAtt'];
    if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') return getAtt[0];
  }
  return undefined;
}

/** Every statement of every IAM policy attached to a role (by the role's logical id). */
export function statementsOfRole(template: Template, roleId: string): Statement[] {
  return Object.values(resourcesOf(template, 'AWS::IAM::Policy'))
    .filter((policy) =>
      asArray(policy.Properties.Roles as unknown[]).some((role) => referencedId(role) === roleId),
    )
    .flatMap((policy) => (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
}

/** Logical id of the Lambda function with this physical name. */
export function functionByName(template: Template, name: string): [string, Resource] {
  const found = Object.entries(resourcesOf(template, 'AWS::Lambda::Function')).filter(
    ([, fn]) => fn.Properties.FunctionName === name,
  );
  if (found.length !== 1) throw new Error(`Expected one function named ${name}, found ${found.length}`);
  return found[0] as [string, Resource];
}

/** `/api/v1/...` of an API Gateway resource, rebuilt from PathPart and ParentId. */
export function resourcePath(template: Template, resourceId: string | undefined): string {
  const resources = resourcesOf(template, 'AWS::ApiGateway::Resource');
  const parts: string[] = [];
  let current = resourceId ? resources[resourceId] : undefined;
  while (current) {
    parts.unshift(current.Properties.PathPart as string);
    current = resources[referencedId(current.Properties.ParentId) ?? ''];
  }
  return `/${parts.join('/')}`;
}

/** The one API Gateway method with this HTTP method on the resource at this path. */
export function methodAt(template: Template, path: string, httpMethod: string): Resource {
  const found = Object.values(resourcesOf(template, 'AWS::ApiGateway::Method')).filter(
    (method) =>
      method.Properties.HttpMethod === httpMethod &&
      resourcePath(template, referencedId(method.Properties.ResourceId)) === path,
  );
  if (found.length !== 1) throw new Error(`Expected one ${httpMethod} ${path}, found ${found.length}`);
  return found[0] as Resource;
}

/**
 * One route's function bundled for real through the house construct (esbuild runs), synthesized into
 * a fresh folder under the temp dir that the caller removes: `assetDir` is the Lambda asset.
 */
export function bundleRouteFunction(routeName: RouteName): {
  service: ServiceFunction;
  outdir: string;
  assetDir: string;
} {
  const outdir = mkdtempSync(join(tmpdir(), `receipt-service-bundle-${routeName}-`));
  const app = new App({ outdir, context: cdkJsonContext() });
  const stack = new Stack(app, 'BundleTest');
  const tracingPolicy = new Policy(stack, 'Tracing', {
    statements: [new PolicyStatement({ actions: ['xray:PutTraceSegments'], resources: ['*'] })],
  });
  const service = new ServiceFunction(stack, 'Bundled', {
    route: findRoute(routeName),
    projectRoot: defaultProjectRoot,
    functionName: `bundle-test-${routeName}`,
    environment: {},
    logRetention: RetentionDays.ONE_DAY,
    tracingPolicy,
  });
  app.synth();
  const [fn] = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function'));
  const key = (fn as { Properties: { Code: { S3Key: string } } }).Properties.Code.S3Key;
  return { service, outdir, assetDir: join(outdir, `asset.${key.replace(/\.zip$/, '')}`) };
}
