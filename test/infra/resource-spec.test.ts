import { beforeAll, describe, expect, it } from '@jest/globals';
import { loadResourceSpec, ResourceSpecChecker } from './resource-spec.js';
import { sharedApp, testStackNames } from './support.js';
import { synthVariant } from './variants.js';

/*
 * Issue 34: every resource of every stack validates against CloudFormation's published resource
 * specification (test/infra/resource-spec.ts says what is checked and where the spec comes from).
 */

let checker: ResourceSpecChecker;

beforeAll(() => {
  checker = new ResourceSpecChecker(loadResourceSpec());
});

describe('the synthesized stacks against the resource specification', () => {
  it('holds the data, service and monitoring stacks, each with resources', () => {
    const { stacks } = sharedApp().templates;
    expect(Object.keys(stacks)).toEqual(expect.arrayContaining(Object.values(testStackNames)));
    for (const template of Object.values(stacks))
      expect(Object.keys(template.Resources ?? {}).length).toBeGreaterThan(0);
  });

  it('finds every resource of every stack of the app as `cdk synth` makes it valid', () => {
    const { stacks } = sharedApp().templates;
    const problems = Object.entries(stacks).flatMap(([name, template]) =>
      checker.checkTemplate(template).map((problem) => `${name}: ${problem}`),
    );
    expect(problems).toEqual([]);
    const types = new Set(
      Object.values(stacks).flatMap((template) =>
        Object.values(template.Resources ?? {}).map((resource) => resource.Type),
      ),
    );
    // The check saw the whole app: its many resource types, not a few.
    expect(types.size).toBeGreaterThan(20);
  });

  it('finds the stacks valid with the optional settings set: alarm e-mail, Square, its webhook URL', () => {
    // One synthesis for the settings that add resources (the topic's subscription) or change their
    // properties (the functions' environment); the shared synthesis has none of them.
    const { templates } = synthVariant({
      monitoring: true,
      context: { alarmEmail: 'ops@example.com' },
      settings: {
        squareLocationId: 'L123',
        squareEnvironment: 'sandbox',
        squareWebhookUrl: 'https://api.example.com/v1/square',
      },
    });
    const problems = Object.entries(templates.stacks).flatMap(([name, template]) =>
      checker.checkTemplate(template).map((problem) => `${name}: ${problem}`),
    );
    expect(problems).toEqual([]);
    expect(JSON.stringify(templates.stacks)).toContain('AWS::SNS::Subscription');
  });
});

/** A function the spec accepts: required properties there, intrinsics where values go. */
const validFunction = () => ({
  Type: 'AWS::Lambda::Function',
  Properties: {
    Code: { S3Bucket: { 'Fn::Sub': 'cdk-assets-${AWS::AccountId}' }, S3Key: 'asset.zip' },
    Role: { 'Fn::GetAtt': ['Role', 'Arn'] },
    Runtime: 'nodejs24.x',
    Handler: 'index.handler',
    MemorySize: 512,
    Timeout: '10',
    Architectures: ['arm64'],
    Environment: { Variables: { STAGE: 'test', TABLE: { Ref: 'Table' } } },
    Layers: { 'Fn::If': ['HasLayer', [{ Ref: 'Layer' }], { Ref: 'AWS::NoValue' }] },
    Tags: [{ Key: 'service', Value: 'receipts' }],
  },
  DependsOn: ['Role'],
});

const check = (resource: unknown): string[] => checker.checkTemplate({ Resources: { Subject: resource } });

describe('the check itself', () => {
  it('refuses one of the app’s own functions with a property misspelt', () => {
    const service = sharedApp().templates.stacks[testStackNames.service];
    const [id, fn] = Object.entries(service?.Resources ?? {}).find(
      ([, resource]) => resource.Type === 'AWS::Lambda::Function',
    ) ?? ['none', undefined];
    const { Timeout, ...rest } = fn?.Properties ?? {};
    expect(checker.checkResource(id, { ...fn, Properties: { ...rest, TimeOut: Timeout } })).toEqual([
      `${id} (AWS::Lambda::Function): TimeOut is not a property the spec lists`,
    ]);
  });

  it('accepts a resource the spec allows, intrinsic functions included', () => {
    expect(check(validFunction())).toEqual([]);
    expect(check({ Type: 'AWS::CDK::Metadata', Properties: { Analytics: 'v2:deflate64:…' } })).toEqual([]);
    expect(check({ Type: 'Custom::Anything', Properties: { ServiceToken: 'arn', Extra: [1] } })).toEqual([]);
  });

  it('refuses a resource type the spec does not have', () => {
    expect(check({ Type: 'AWS::Lambda::Functions', Properties: {} })).toEqual([
      'Subject: AWS::Lambda::Functions is not a resource type of the spec',
    ]);
  });

  it('refuses a property the spec does not list, at the top and inside a nested type', () => {
    const resource = validFunction();
    Object.assign(resource.Properties, { MemorySizeMb: 512 });
    Object.assign(resource.Properties.Environment, { Variable: {} });
    expect(check(resource)).toEqual([
      'Subject (AWS::Lambda::Function).Environment: Variable is not a property the spec lists',
      'Subject (AWS::Lambda::Function): MemorySizeMb is not a property the spec lists',
    ]);
    expect(check({ ...validFunction(), DeletePolicy: 'Retain' })).toEqual([
      'Subject: DeletePolicy is not a resource attribute',
    ]);
  });

  it('refuses a resource that leaves out a required property, at the top and inside a nested type', () => {
    const table = {
      Type: 'AWS::DynamoDB::Table',
      Properties: {
        AttributeDefinitions: [{ AttributeName: 'pk' }],
        BillingMode: 'PAY_PER_REQUEST',
      },
    };
    expect(check(table)).toEqual([
      'Subject (AWS::DynamoDB::Table): required KeySchema is missing',
      'Subject (AWS::DynamoDB::Table).AttributeDefinitions[0]: required AttributeType is missing',
    ]);
    const { Properties, ...rest } = validFunction();
    const { Code: _code, ...withoutCode } = Properties;
    expect(check({ ...rest, Properties: withoutCode })).toEqual([
      'Subject (AWS::Lambda::Function): required Code is missing',
    ]);
  });

  it('refuses a literal of the wrong type (primitive, list, map, nested type, tag) or not among the values the spec enumerates', () => {
    const resource = validFunction();
    Object.assign(resource.Properties, {
      MemorySize: 'lots',
      Timeout: 1.5,
      Architectures: 'arm64',
      PackageType: 'Jar',
      Tags: [{ Key: 'service' }],
    });
    Object.assign(resource.Properties.Environment, { Variables: ['STAGE=test'] });
    expect(check(resource)).toEqual([
      'Subject (AWS::Lambda::Function).MemorySize: "lots" is not an integer',
      'Subject (AWS::Lambda::Function).Timeout: 1.5 is not an integer',
      'Subject (AWS::Lambda::Function).Architectures: "arm64" is not a list',
      'Subject (AWS::Lambda::Function).Environment.Variables: ["STAGE=test"] is not a map',
      'Subject (AWS::Lambda::Function).Tags[0]: required Value is missing',
      'Subject (AWS::Lambda::Function).PackageType: "Jar" is not one of Image, Zip',
    ]);
    expect(
      check({ ...validFunction(), Properties: { ...validFunction().Properties, Role: ['arn'] } }),
    ).toEqual(['Subject (AWS::Lambda::Function).Role: ["arn"] is not a string']);
  });

  it('refuses a string-building intrinsic where a list or object goes, and checks both branches of Fn::If', () => {
    const resource = validFunction();
    Object.assign(resource.Properties, {
      Environment: { 'Fn::Join': ['', ['a', 'b']] },
      MemorySize: { 'Fn::If': ['Big', 1024, 'big'] },
    });
    expect(check(resource)).toEqual([
      'Subject (AWS::Lambda::Function).MemorySize<Fn::If else>: "big" is not an integer',
      'Subject (AWS::Lambda::Function).Environment: Fn::Join makes a string, where the spec wants an object',
    ]);
  });
});
