import { Validations } from 'aws-cdk-lib';
import type { SpecRestApi } from 'aws-cdk-lib/aws-apigateway';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Policy } from 'aws-cdk-lib/aws-iam';
import type { Secret } from 'aws-cdk-lib/aws-secretsmanager';

/** What the data stack (infra/data-stack.ts) keeps that cdk-nag flags. */
export interface DataNagSubjects {
  /** Tables without point-in-time recovery: their data lives minutes, not years. */
  ephemeralTables: readonly Table[];
  /** Rotated by the admin CLI (`card-key rotate`), which also re-tags what is stored. */
  cardTagSecret: Secret;
  /** Replaced by hand if ever: replacing it only makes outstanding cursors start again. */
  cursorSecret: Secret;
}

/** What the service stack (infra/receipt-service-stack.ts) keeps that cdk-nag flags. */
export interface ServiceNagSubjects {
  api: SpecRestApi;
  /** Absent where the stage does not trace (settings `tracing: off`). */
  tracingPolicy?: Policy;
}

/**
 * Every cdk-nag AwsSolutions finding the stacks keep, acknowledged with the reason it is acceptable
 * (cdk-nag 3 reads CDK's own `Validations.of(...).acknowledge`). Any other finding fails
 * `npm run synth` and the infra tests.
 */
export const suppressionReasons = {
  apiAuthorization:
    'Callers authenticate with API keys: every method has the edge Lambda authorizer, which checks x-api-key ' +
    'against hashed keys in DynamoDB on the keyed routes (the public health check, openapi.json, API reference ' +
    'and the 404/405 mocks are open to anyone), and the functions verify the key again with per-key roles. The spec defines API-key authentication and no ' +
    'end-user identities, so IAM and Cognito authorizers do not apply.',
  waf:
    'Edge limits come from per-tier usage plans (rate, burst, daily quota) and the functions count per key and ' +
    'per source IP. A WAFv2 web ACL costs $5/month plus rules; the platform team can associate one with the ' +
    'stage without changing this stack.',
  apiRequestValidation:
    "The API's definition declares its request validator (x-amazon-apigateway-request-validators: path " +
    'parameters, on every operation that has them), which cdk-nag does not read; bodies are validated by the ' +
    'functions, which name every bad field in the service envelope.',
  apiGatewayLoggingRole:
    'The account-level role API Gateway writes execution and access logs through; ' +
    'AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS maintains for exactly that role.',
  xray:
    'X-Ray PutTraceSegments and PutTelemetryRecords support no resource-level permissions; this policy holds ' +
    'only those two actions and is shared by the functions so no other policy needs Resource "*".',
  ephemeralTable:
    'Holds only short-lived data (access tokens live at most 3 minutes, rate-limit windows, idempotency ' +
    'records) that DynamoDB TTL deletes: there is nothing worth restoring, so point-in-time recovery is off.',
  cardTagSecretRotation:
    'A new card-tag key version is useless until every stored card tag is re-tagged to it, which a Secrets ' +
    'Manager rotation function cannot do: `npm run admin -- card-key rotate --aws` adds the version and ' +
    're-tags (docs/THREAT-MODEL.md). The secret is under a customer-managed key with yearly rotation.',
  cursorSecretRotation:
    'The paging cursor key seals list positions; replacing it only makes the cursors already handed out ' +
    'fail with 400 INVALID_CURSOR, after which clients page again from the start. Scheduled rotation would ' +
    'break paging under way for no gain; an operator replaces it with `aws secretsmanager put-secret-value`.',
} as const;

export function applyServiceNagSuppressions(subjects: ServiceNagSubjects): void {
  // Acknowledgements apply to the construct and everything under it (every method of the API).
  Validations.of(subjects.api).acknowledge(
    { id: 'AwsSolutions-APIG2', reason: suppressionReasons.apiRequestValidation },
    { id: 'AwsSolutions-APIG4', reason: suppressionReasons.apiAuthorization },
    { id: 'AwsSolutions-COG4', reason: suppressionReasons.apiAuthorization },
  );
  Validations.of(subjects.api.deploymentStage).acknowledge({
    id: 'AwsSolutions-APIG3',
    reason: suppressionReasons.waf,
  });
  const loggingRole = subjects.api.node.tryFindChild('CloudWatchRole');
  if (loggingRole) {
    Validations.of(loggingRole).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
      reason: suppressionReasons.apiGatewayLoggingRole,
    });
  }
  if (subjects.tracingPolicy) {
    Validations.of(subjects.tracingPolicy).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: suppressionReasons.xray,
    });
  }
}

export function applyDataNagSuppressions(subjects: DataNagSubjects): void {
  Validations.of(subjects.cardTagSecret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason: suppressionReasons.cardTagSecretRotation,
  });
  Validations.of(subjects.cursorSecret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason: suppressionReasons.cursorSecretRotation,
  });
  for (const table of subjects.ephemeralTables) {
    Validations.of(table).acknowledge({ id: 'AwsSolutions-DDB3', reason: suppressionReasons.ephemeralTable });
  }
}
