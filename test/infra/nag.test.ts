import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { sharedApp } from './support.js';
import { buildVariant } from './variants.js';

interface ValidationReport {
  pluginReports: {
    pluginName: string;
    conclusion: 'success' | 'failure';
    violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[];
  }[];
}

/** Every acknowledgement the shared synthesis recorded in its stacks: rule id → the reasons given. */
function acknowledgements(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const stack of sharedApp().assembly.stacks) {
    for (const entry of stack.findMetadataByType('aws:cdk:acknowledged-rules')) {
      for (const [id, reason] of Object.entries(entry.data as unknown as Record<string, string>)) {
        const rule = id.replace(/^annotation::/i, '');
        found.set(rule, new Set([...(found.get(rule) ?? []), reason]));
      }
    }
  }
  return found;
}

describe('cdk-nag AwsSolutions', () => {
  it('finds nothing that is not acknowledged', () => {
    // The shared synthesis ran infra/app.ts, which checks every stack as `npm run synth` does; its
    // report lists only the plugins that found something.
    const { pluginReports } = JSON.parse(
      readFileSync(join(sharedApp().assembly.directory, 'validation-report.json'), 'utf8'),
    ) as ValidationReport;
    const findings = pluginReports.flatMap((report) =>
      report.violations.flatMap((violation) =>
        violation.violatingConstructs.map(
          (construct) => `${report.pluginName} ${violation.ruleName} ${construct.constructPath}`,
        ),
      ),
    );
    expect(findings).toEqual([]);
    expect(pluginReports.filter((report) => report.conclusion !== 'success')).toEqual([]);
    // A clean report cannot tell that the checks ran: the same stacks, checked here directly.
    const { app } = buildVariant({ monitoring: true });
    const report = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(app);
    expect(report.violations.map((violation) => violation.ruleName)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('also with the alarm topic and without the API Gateway logging role', () => {
    const { app } = buildVariant({
      monitoring: true,
      context: { alarmEmail: 'ops@example.com', apiGatewayCloudWatchRole: 'false' },
    });
    app.synth();
    expect(new AwsSolutionsChecks().validateScope(app).violations).toEqual([]);
  });

  it.each(['lambda', 'off'])('also with tracing %s', (tracing) => {
    const { app } = buildVariant({ monitoring: true, context: { tracing } });
    app.synth();
    expect(new AwsSolutionsChecks().validateScope(app).violations).toEqual([]);
  });

  it('acknowledges exactly the known findings, each with a written reason', () => {
    const found = acknowledgements();
    expect([...found.keys()].sort()).toEqual([
      // The request validator is the API definition's, which cdk-nag does not read.
      'AwsSolutions-APIG2',
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
    // cdk-nag walks the construct tree: this needs the stacks built, not synthesized.
    const { service } = buildVariant();
    // A wildcard grant added after the fact must not hide behind the X-Ray acknowledgement.
    const [fn] = service.functions.values();
    fn?.role.addToPrincipalPolicy(new PolicyStatement({ actions: ['dynamodb:Scan'], resources: ['*'] }));
    const rules = new AwsSolutionsChecks()
      .validateScope(service)
      .violations.map((violation) => violation.ruleName);
    expect(rules).toContain('AwsSolutions-IAM5[Resource::*]');
  });
});
