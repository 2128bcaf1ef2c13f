import { CfnOutput, Stack, Tags, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { Monitoring } from './monitoring.js';
import type { ReceiptServiceStack } from './receipt-service-stack.js';
import { resolveSettings, type ServiceSettings, type SettingsInput } from './settings.js';

export interface ReceiptServiceMonitoringStackProps extends StackProps {
  /** The service stack whose functions, API and delivery queue are watched. */
  service: ReceiptServiceStack;
  /** Overrides context and defaults (see infra/settings.ts). */
  settings?: SettingsInput;
}

/**
 * Alarms, the access log's metric filters, the alarm topic and the dashboard of one stage, kept apart
 * so the service stack stays far below CloudFormation's 500. The alarms read the metrics the functions
 * publish (EMF) and Lambda's own, ten functions to an alarm, so a function adds no resource here until
 * its group is full (docs/DEPLOY.md, "Alarms"). It reads the service and data stacks and nothing reads it.
 */
export class ReceiptServiceMonitoringStack extends Stack {
  readonly settings: ServiceSettings;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: ReceiptServiceMonitoringStackProps) {
    super(scope, id, props);
    const settings = resolveSettings(this, props.settings);
    this.settings = settings;
    const { service } = props;

    Tags.of(this).add('service', 'receipt-service');
    Tags.of(this).add('stage', settings.stage);

    this.monitoring = new Monitoring(this, 'Monitoring', {
      resourcePrefix: settings.resourcePrefix,
      metricNamespace: settings.metricNamespace,
      stage: service.api.api.deploymentStage,
      accessLogGroup: service.api.accessLogGroup,
      functions: service.monitoredFunctions,
      webhooks: {
        deadLetterQueue: service.webhookDelivery.deadLetterQueue,
        deliveryDeadLetterQueue: service.webhookDelivery.deliveryDeadLetterQueue,
      },
      tables: service.data.tables,
      alarmEmail: settings.alarmEmail,
      dashboard: settings.dashboard,
      security: {
        unauthorized: settings.unauthorizedAlarmThreshold,
        forbidden: settings.forbiddenAlarmThreshold,
        decryptionErrors: settings.decryptionErrorAlarmThreshold,
        grantErrors: settings.grantErrorAlarmThreshold,
        registerConflicts: settings.registerConflictAlarmThreshold,
        reRegistrations: settings.reRegistrationAlarmThreshold,
      },
    });

    if (this.monitoring.topic)
      new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn });
  }
}
