import { App, Validations } from 'aws-cdk-lib';
import cdkNag from 'cdk-nag';
import { addReceiptServiceStacks } from './service-stacks.js';
import { resolveSettings } from './settings.js';

// cdk-nag is CommonJS without named-export hints Node's ESM loader can read.
const { AwsSolutionsChecks } = cdkNag;

/**
 * The CDK app (`cdk.json` runs it with tsx). Three stacks per stage (infra/service-stacks.ts):
 * `cdk deploy --all -c stage=prod`, or one of them by name. Without credentials the stacks are
 * environment-agnostic, so `npm run synth` works offline.
 */
const app = new App();
// Validated here too, so a bad stage is reported as a setting before it becomes a bad stack name.
resolveSettings(app);

addReceiptServiceStacks(app, {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});

// Findings without a written acknowledgement (infra/nag-suppressions.ts) fail the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
