import type { Environment } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { RouteDeclaration } from '../functions/routes.js';
import { ReceiptServiceDataStack } from './data-stack.js';
import { ReceiptServiceMonitoringStack } from './monitoring-stack.js';
import { ReceiptServiceStack } from './receipt-service-stack.js';
import { resolveSettings, type SettingsInput } from './settings.js';
import { stackNames } from './stack-names.js';

export interface ReceiptServiceStacksProps {
  /** Overrides context and defaults (see infra/settings.ts); the same for the three stacks. */
  settings?: SettingsInput;
  /** Defaults to functions/routes.ts. */
  routes?: readonly RouteDeclaration[];
  /** Defaults to this repository. */
  projectRoot?: string;
  env?: Environment;
}

export interface ReceiptServiceStacks {
  data: ReceiptServiceDataStack;
  service: ReceiptServiceStack;
  monitoring: ReceiptServiceMonitoringStack;
}

/**
 * One stage as three stacks, split by how long what they hold lives (docs/DEPLOY.md, "Stacks"):
 * data (retained), service (the code) and monitoring. The service stack refers to the data stack and
 * the monitoring stack to both; those references make CDK deploy them in that order.
 */
export function addReceiptServiceStacks(
  scope: Construct,
  props: ReceiptServiceStacksProps = {},
): ReceiptServiceStacks {
  const { stage } = resolveSettings(scope, props.settings);
  const names = stackNames(stage);
  const common = { env: props.env, settings: props.settings };
  const data = new ReceiptServiceDataStack(scope, names.data, {
    ...common,
    description: `Encrypted digital receipt service (${stage}): tables, keys and secrets, retained`,
    routes: props.routes,
  });
  const service = new ReceiptServiceStack(scope, names.service, {
    ...common,
    description: `Encrypted digital receipt service (${stage}): functions and API`,
    data,
    routes: props.routes,
    projectRoot: props.projectRoot,
  });
  service.addStackDependency(data, 'functions use the tables, keys, secret and escrow roles');
  const monitoring = new ReceiptServiceMonitoringStack(scope, names.monitoring, {
    ...common,
    description: `Encrypted digital receipt service (${stage}): alarms and dashboard`,
    service,
  });
  monitoring.addStackDependency(service, 'alarms watch the functions, the API and the delivery queue');
  return { data, service, monitoring };
}
