import { describe, expect, it } from '@jest/globals';
import { Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import cdkNag from 'cdk-nag';
import { synth } from './support.js';

const { AwsSolutionsChecks } = cdkNag;

/** Every acknowledgement in the tree: rule id → the reasons given for it. */
function acknowledgements(root: IConstruct): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const construct of root.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        const rule = id.replace(/^annotation::/i, '');
        found.set(rule, new Set([...(found.get(rule) ?? []), reason]));
      }
    }
  }
  return found;
}

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing that is not acknowledged', () => {
    const { stack } = synth();
    const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(stack);
    expect(report.violations.map((violation) => violation.ruleName)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('also with the alarm topic and without the API Gateway logging role', () => {
    const { stack } = synth({
      context: { alarmEmail: 'ops@example.com', apiGatewayCloudWatchRole: 'false' },
    });
    expect(new AwsSolutionsChecks().validateScope(stack).violations).toEqual([]);
  });

  it('acknowledges exactly the known findings, each with a written reason', () => {
    const { stack } = synth();
    const found = acknowledgements(stack);
    expect([...found.keys()].sort()).toEqual([
      'AwsSolutions-APIG3',
      'AwsSolutions-APIG4',
      'AwsSolutions-COG4',
      'AwsSolutions-DDB3',
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-SMG4',
      'AwsSolutions-SQS3',
    ]);
    for (const reasons of found.values()) {
      for (const reason of reasons) expect(reason.length).toBeGreaterThan(60);
    }
  });

  it('still reports a finding nobody acknowledged', () => {
    const { stack } = synth();
    // A wildcard grant added after the fact must not hide behind the X-Ray acknowledgement.
    const [fn] = stack.functions.values();
    fn?.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['dynamodb:Scan'], resources: ['*'] }));
    const rules = new AwsSolutionsChecks()
      .validateScope(stack)
      .violations.map((violation) => violation.ruleName);
    expect(rules).toContain('AwsSolutions-IAM5[Resource::*]');
  });
});
