import { App, Validations } from 'aws-cdk-lib';
import cdkNag from 'cdk-nag';
import { ReceiptServiceStack } from './receipt-service-stack.js';
import { resolveSettings } from './settings.js';

// cdk-nag is CommonJS without named-export hints Node's ESM loader can read.
const { AwsSolutionsChecks } = cdkNag;

/**
 * The CDK app (`cdk.json` runs it with tsx). One stack per stage: `cdk deploy -c stage=prod`.
 * Without credentials the stack is environment-agnostic, so `npm run synth` works offline.
 */
const app = new App();
// Validated here too, so a bad stage is reported as a setting before it becomes a bad stack name.
const { stage } = resolveSettings(app);

new ReceiptServiceStack(app, `ReceiptService-${stage}`, {
  description: `Encrypted digital receipt service (${stage})`,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  settings: { stage },
});

// Findings without a written acknowledgement (infra/nag-suppressions.ts) fail the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
