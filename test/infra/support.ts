import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Template } from 'aws-cdk-lib/assertions';
import { CloudAssembly, type CloudFormationStackArtifact } from 'aws-cdk-lib/cx-api';
import type { TemplateJson } from '../../infra/cloud-assembly.js';
import { stackNames } from '../../infra/stack-names.js';

/*
 * Reading synthesized templates. Deliberately free of the stacks' own modules: a file that only
 * reads the shared synthesis loads no construct library (test/infra/variants.ts builds variants).
 */

/** The repository: where cdk.json, package.json and the route entries are. */
export const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The feature flags `cdk synth` runs with, so the tests see the same template. */
export const cdkJsonContext = (): Record<string, unknown> =>
  (
    JSON.parse(readFileSync(join(projectRoot, 'cdk.json'), 'utf8')) as {
      context: Record<string, unknown>;
    }
  ).context;

/** The stage the tests synthesize: resource names are `receipt-service-test-…`. */
export const TEST_STAGE = 'test';
export const testStackNames = stackNames(TEST_STAGE);

/** One stage's stacks as the tests read them. */
export interface StageTemplates {
  data: Template;
  service: Template;
  /** Absent from the variants that leave the monitoring stack out. */
  monitoring?: Template;
  /**
   * The stage's stacks as one template, each `Fn::GetStackOutput` replaced by the value of the output
   * it reads (what CloudFormation resolves it to at deploy time): the assertions that follow a
   * reference from a function to a table, key or role read this one, whichever stack holds what.
   */
  template: Template;
  /** Each stack's template by stack name, as synthesized. */
  stacks: Record<string, TemplateJson>;
}

interface GetStackOutput {
  'Fn::GetStackOutput': { StackName: string; OutputName: string };
}

const isGetStackOutput = (value: unknown): value is GetStackOutput =>
  !!value && typeof value === 'object' && 'Fn::GetStackOutput' in value;

/** Every `Fn::GetStackOutput` in a template: the stacks and outputs it reads. */
export function stackOutputReads(value: unknown): GetStackOutput['Fn::GetStackOutput'][] {
  if (isGetStackOutput(value)) return [value['Fn::GetStackOutput']];
  if (Array.isArray(value)) return value.flatMap(stackOutputReads);
  if (value && typeof value === 'object') return Object.values(value).flatMap(stackOutputReads);
  return [];
}

/**
 * The stacks as one template, cross-stack reads resolved. Fails on a read of a stack or an output
 * that is not there, and on a logical id two stacks both use.
 */
export function stageTemplate(stacks: Record<string, TemplateJson>): TemplateJson {
  const resolve = (value: unknown): unknown => {
    if (isGetStackOutput(value)) {
      const { StackName, OutputName } = value['Fn::GetStackOutput'];
      const output = stacks[StackName]?.Outputs?.[OutputName];
      if (!output)
        throw new Error(`Fn::GetStackOutput reads ${StackName}.${OutputName}, which does not exist`);
      return resolve(output.Value);
    }
    if (Array.isArray(value)) return value.map(resolve);
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, resolve(inner)]));
    return value;
  };
  const merged: Required<Pick<TemplateJson, 'Resources' | 'Outputs'>> = { Resources: {}, Outputs: {} };
  for (const [name, template] of Object.entries(stacks)) {
    for (const section of ['Resources', 'Outputs'] as const) {
      for (const [id, entry] of Object.entries(template[section] ?? {})) {
        if (id in merged[section]) throw new Error(`${name} and another stack both define ${section}.${id}`);
        (merged[section] as Record<string, unknown>)[id] = resolve(entry);
      }
    }
  }
  return merged;
}

/** Reads a synthesized assembly's stacks of the test stage. */
export function stageTemplatesOf(assembly: CloudAssembly): StageTemplates {
  const stacks = Object.fromEntries(
    assembly.stacks.map((stack: CloudFormationStackArtifact) => [
      stack.stackName,
      stack.template as TemplateJson,
    ]),
  );
  const stack = (name: string): Template => {
    const template = stacks[name];
    if (!template) throw new Error(`No stack ${name} in the assembly: ${Object.keys(stacks).join(', ')}`);
    return Template.fromJSON(template);
  };
  return {
    data: stack(testStackNames.data),
    service: stack(testStackNames.service),
    monitoring: stacks[testStackNames.monitoring] ? stack(testStackNames.monitoring) : undefined,
    // Each stack's own Template has checked it for a dependency cycle, and CDK refuses one between
    // stacks at synth: checking the merged whole again would cost as much as all three and find nothing.
    template: Template.fromJSON(stageTemplate(stacks), { skipCyclicalDependenciesCheck: true }),
    stacks,
  };
}

let shared: { assembly: CloudAssembly; templates: StageTemplates } | undefined;

/**
 * The app as `cdk synth -c stage=test` makes it, synthesized once for the whole run by
 * test/infra/global-setup.js (esbuild skipped: test/infra/bundling.test.ts bundles for real).
 */
export function sharedApp(): { assembly: CloudAssembly; templates: StageTemplates } {
  if (!shared) {
    const outdir = process.env.INFRA_TEST_ASSEMBLY;
    if (!outdir) throw new Error('INFRA_TEST_ASSEMBLY is not set: run the infra tests with `npm test`');
    const assembly = new CloudAssembly(outdir);
    shared = { assembly, templates: stageTemplatesOf(assembly) };
  }
  return shared;
}

/** The shared synthesis's stage, as one template (StageTemplates.template). */
export const sharedTemplate = (): Template => sharedApp().templates.template;

export type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
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

/**
 * Logical id of the role a function runs as: its own (`Fn::GetAtt [Role, Arn]`), or one the data
 * stack made for it, whose ARN the service stack builds from the role's name (`…:role/` + `Ref`).
 */
export function roleIdOf(fn: Resource): string {
  const role = fn.Properties.Role;
  const own = referencedId(role);
  if (own) return own;
  const parts = (role as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']?.[1] ?? [];
  const [beforeName, name] = parts.slice(-2);
  const id = typeof beforeName === 'string' && beforeName.endsWith(':role/') ? referencedId(name) : undefined;
  if (!id) throw new Error(`No role named in ${JSON.stringify(role)}`);
  return id;
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

/** An operation of the API's definition, as API Gateway reads it. */
export interface ApiOperation {
  security?: Record<string, unknown>[];
  parameters?: { name: string; in: string; required?: boolean }[];
  responses?: Record<string, { headers?: Record<string, unknown> }>;
  'x-amazon-apigateway-request-validator'?: string;
  'x-amazon-apigateway-integration'?: {
    type: string;
    httpMethod?: string;
    uri?: unknown;
    requestTemplates?: Record<string, string>;
    responses?: Record<
      string,
      {
        statusCode: string;
        responseParameters?: Record<string, string>;
        responseTemplates?: Record<string, string>;
      }
    >;
  };
  [member: string]: unknown;
}

/** The REST API's OpenAPI definition (its `Body`), as the template holds it. */
export interface ApiDefinitionJson {
  openapi: string;
  paths: Record<string, Record<string, ApiOperation>>;
  components: { securitySchemes: Record<string, Record<string, unknown>> } & Record<string, unknown>;
  security?: Record<string, unknown>[];
  'x-amazon-apigateway-gateway-responses': Record<
    string,
    {
      statusCode?: string;
      responseParameters: Record<string, string>;
      responseTemplates: Record<string, string>;
    }
  >;
  'x-amazon-apigateway-request-validators': Record<string, Record<string, boolean>>;
  [member: string]: unknown;
}

/** The definition of the one REST API in the template. */
export function apiDefinitionOf(template: Template): ApiDefinitionJson {
  const apis = Object.values(resourcesOf(template, 'AWS::ApiGateway::RestApi'));
  if (apis.length !== 1) throw new Error(`Expected one REST API, found ${apis.length}`);
  const body = apis[0]?.Properties.Body;
  if (!body) throw new Error('The REST API has no inline definition');
  return body as ApiDefinitionJson;
}

/** Each method of the definition: `ANY` for API Gateway's x-amazon-apigateway-any-method. */
export function operationsOf(
  definition: ApiDefinitionJson,
): { path: string; method: string; operation: ApiOperation }[] {
  const methods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
  return Object.entries(definition.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([key]) => methods.includes(key) || key === 'x-amazon-apigateway-any-method')
      .map(([key, operation]) => ({
        path,
        method: key === 'x-amazon-apigateway-any-method' ? 'ANY' : key.toUpperCase(),
        operation,
      })),
  );
}

/** The one operation with this HTTP method (or `ANY`) at this path of the definition. */
export function operationAt(template: Template, path: string, httpMethod: string): ApiOperation {
  const found = operationsOf(apiDefinitionOf(template)).filter(
    (candidate) => candidate.path === path && candidate.method === httpMethod,
  );
  if (found.length !== 1) throw new Error(`Expected one ${httpMethod} ${path}, found ${found.length}`);
  return (found[0] as { operation: ApiOperation }).operation;
}

/** The name of the definition's Lambda authorizer (its security scheme). */
export function authorizerNameOf(definition: ApiDefinitionJson): string {
  const names = Object.entries(definition.components.securitySchemes)
    .filter(([, scheme]) => scheme['x-amazon-apigateway-authtype'] === 'custom')
    .map(([name]) => name);
  if (names.length !== 1) throw new Error(`Expected one Lambda authorizer, found ${names.length}`);
  return names[0] as string;
}

/** The security schemes an operation requires, all of its requirement objects together. */
export const requiredSchemes = (operation: ApiOperation): string[] =>
  (operation.security ?? []).flatMap((requirement) => Object.keys(requirement)).sort();
