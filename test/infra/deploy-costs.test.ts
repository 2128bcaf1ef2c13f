import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import type { TemplateJson } from '../../infra/cloud-assembly.js';
import { deployCostBlocks, deployPage, pageWithCosts, readPrices } from '../../scripts/deploy-costs.js';
import { sharedApp } from './support.js';

/**
 * docs/DEPLOY.md's cost at rest and what a teardown keeps are what the synthesized stacks hold:
 * computed by scripts/deploy-costs.ts from the run's one synthesis (the stage and settings the
 * script synthesizes with), so a stack that gains or loses a table, key, secret or alarm fails here
 * until `npm run deploy-costs` has written the page again.
 */
const stacks = () => sharedApp().templates.stacks;

describe('docs/DEPLOY.md, cost at rest and teardown', () => {
  it('are what the synthesized stacks and bench/prices.json give (run `npm run deploy-costs`)', () => {
    const page = readFileSync(deployPage, 'utf8');
    expect(page).toBe(pageWithCosts(page, stacks(), readPrices()));
  });

  it('count what the templates hold: each KMS key, secret and alarm metric is priced, retained tables kept', () => {
    const resources = Object.values(stacks()).flatMap((template) => Object.values(template.Resources ?? {}));
    const count = (type: string) => resources.filter((resource) => resource.Type === type).length;
    const { cost, teardown } = deployCostBlocks(stacks(), readPrices());
    expect(cost).toContain(`| ${count('AWS::KMS::Key')} | $${count('AWS::KMS::Key').toFixed(2)} |`);
    expect(cost).toContain(`CloudWatch alarms: ${count('AWS::CloudWatch::Alarm')},`);
    const retainedTables = resources.filter(
      (resource) =>
        resource.Type === 'AWS::DynamoDB::Table' &&
        (resource as { DeletionPolicy?: string }).DeletionPolicy === 'Retain',
    ).length;
    expect(retainedTables).toBeGreaterThan(0);
    expect(teardown).toContain(`| DynamoDB tables (deletion protection on) | ${retainedTables} |`);
  });

  it('refuses a resource type it cannot price, and a table whose capacity is provisioned', () => {
    const withResource = (resource: object): Record<string, TemplateJson> => ({
      ...stacks(),
      Extra: { Resources: { Added: resource as { Type: string } } },
    });
    expect(() => deployCostBlocks(withResource({ Type: 'AWS::RDS::DBInstance' }), readPrices())).toThrow(
      /does not know what AWS::RDS::DBInstance costs at rest/,
    );
    expect(() =>
      deployCostBlocks(
        withResource({ Type: 'AWS::DynamoDB::Table', Properties: { BillingMode: 'PROVISIONED' } }),
        readPrices(),
      ),
    ).toThrow(/provisioned/);
  });
});
