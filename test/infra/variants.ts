import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Policy, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { RetentionDays } from 'aws-cdk-lib/aws-logs';
import { ReceiptServiceDataStack } from '../../infra/data-stack.js';
import { ReceiptServiceMonitoringStack } from '../../infra/monitoring-stack.js';
import { ReceiptServiceStack } from '../../infra/receipt-service-stack.js';
import { ServiceFunction } from '../../infra/service-function.js';
import type { SettingsInput } from '../../infra/settings.js';
import { findRoute, type RouteDeclaration, type RouteName } from '../../functions/routes.js';
import type { FunctionDefinition } from '../../lib/kernel/route.js';
import {
  cdkJsonContext,
  projectRoot,
  stageTemplatesOf,
  TEST_STAGE,
  testStackNames,
  type StageTemplates,
} from './support.js';

/*
 * What the shared synthesis (support.ts) cannot show: the app with other settings or routes, and the
 * construct tree itself (cdk-nag). Each variant builds only the stacks it needs: the data and service
 * stacks always (the service stack refers to the data stack), the monitoring stack when asked.
 */

/*
 * What a variant adds to the context: no esbuild (the bundle tests below run it themselves), and no
 * stack trace captured at each construct and annotation for the assembly's metadata. In a test file a
 * trace is an Error's stack formatted through Jest's source maps: about 2 s of the run's CPU, for
 * metadata no test reads (the templates are the same without it). The shared synthesis keeps them, as
 * `cdk synth` does.
 */
const variantContext = {
  'aws:cdk:bundling-stacks': [],
  'aws:cdk:disable-creation-stack-traces': true,
  'aws:cdk:disable-stack-trace': true,
};

export interface VariantOptions {
  /** Stack props, as a test of one setting gives them. */
  settings?: SettingsInput;
  /** CDK context, as `-c key=value` gives it. */
  context?: Record<string, unknown>;
  routes?: readonly RouteDeclaration[];
  /** Build the monitoring stack too (alarms, metric filters, topic, dashboard). */
  monitoring?: boolean;
}

export interface VariantStacks {
  app: App;
  data: ReceiptServiceDataStack;
  service: ReceiptServiceStack;
  monitoring?: ReceiptServiceMonitoringStack;
}

/**
 * The variant's construct tree, not synthesized. When it is, esbuild is skipped, and so is CDK's
 * built-in CloudFormation validation: it checks every resource of every stack against its schema (some
 * seconds each time a test file first loads it), and the shared synthesis already runs it on the app as
 * it deploys; a variant's assertions are about what its settings or routes change.
 */
export function buildVariant(options: VariantOptions = {}): VariantStacks {
  const app = new App({
    context: { ...cdkJsonContext(), ...options.context, ...variantContext },
    builtinCloudFormationValidation: false,
  });
  const settings = { stage: TEST_STAGE, ...options.settings };
  const data = new ReceiptServiceDataStack(app, testStackNames.data, { settings, routes: options.routes });
  const service = new ReceiptServiceStack(app, testStackNames.service, {
    settings,
    data,
    routes: options.routes,
  });
  const monitoring = options.monitoring
    ? new ReceiptServiceMonitoringStack(app, testStackNames.monitoring, { settings, service })
    : undefined;
  return { app, data, service, monitoring };
}

/** The variant synthesized: its stacks and their templates. */
export function synthVariant(options: VariantOptions = {}): VariantStacks & { templates: StageTemplates } {
  const stacks = buildVariant(options);
  return { ...stacks, templates: stageTemplatesOf(stacks.app.synth()) };
}

/**
 * One function bundled for real through the house construct (esbuild and the bundle guard run),
 * synthesized into a fresh folder under the temp dir that the caller removes: `assetDir` is the
 * Lambda asset. A route by name, or a function that serves no path (the edge authorizer).
 */
export function bundleFunction(definition: RouteName | FunctionDefinition): {
  service: ServiceFunction;
  outdir: string;
  assetDir: string;
} {
  const route = typeof definition === 'string' ? findRoute(definition) : definition;
  const outdir = mkdtempSync(join(tmpdir(), `receipt-service-bundle-${route.name}-`));
  // Only the bundle is looked at: CDK's CloudFormation validation would add seconds and check nothing.
  const app = new App({ outdir, context: cdkJsonContext(), builtinCloudFormationValidation: false });
  const stack = new Stack(app, 'BundleTest');
  const tracingPolicy = new Policy(stack, 'Tracing', {
    statements: [new PolicyStatement({ actions: ['xray:PutTraceSegments'], resources: ['*'] })],
  });
  const service = new ServiceFunction(stack, 'Bundled', {
    route,
    projectRoot,
    functionName: `bundle-test-${route.name}`,
    environment: {},
    logRetention: RetentionDays.ONE_DAY,
    tracingPolicy,
  });
  const template = Template.fromJSON(app.synth().getStackByName(stack.stackName).template as object);
  const [fn] = Object.values(template.findResources('AWS::Lambda::Function'));
  const key = (fn as { Properties: { Code: { S3Key: string } } }).Properties.Code.S3Key;
  return { service, outdir, assetDir: join(outdir, `asset.${key.replace(/\.zip$/, '')}`) };
}
