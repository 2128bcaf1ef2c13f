import { Aws, RemovalPolicy } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { AccountRootPrincipal, Effect, PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Construct } from 'constructs';
import { tableDefinitions, tableKeys, type TableDefinition, type TableKey } from '../lib/kernel/tables.js';
import { keyAdministration } from './permissions.js';

export interface DataTablesProps {
  /** Physical names are `${prefix}-${definition.name}`, so operators and the admin CLI can find them. */
  prefix: string;
  /** For key descriptions. */
  stage: string;
}

/**
 * Tables whose items carry card tags (or a prefix of one) or webhook signing secrets: a copy of one of
 * them, with the card-tag key, links receipts to cards, or lets one forge events, so they are
 * encrypted under a key of ours whose use is logged in CloudTrail and can be revoked, not under the
 * AWS-owned default. A new table keyed by a card tag, or holding a secret, belongs here.
 */
export const customerKeyedTables: readonly TableKey[] = [
  'users',
  'receipts',
  'audit',
  'accessTokens',
  'webhooks',
  // Derived from card tags and sealed under the card-tag key, and linking entries of one card.
  'evidence',
];

/** Only through DynamoDB's own calls: Decrypt of the key used elsewhere would be a way around the tables' IAM. */
export const dynamoViaService = (): Record<string, unknown> => ({
  StringEquals: {
    'kms:ViaService': `dynamodb.${Aws.REGION}.amazonaws.com`,
    'kms:CallerAccount': Aws.ACCOUNT_ID,
  },
});

const logicalId = (key: TableKey): string => `${key.charAt(0).toUpperCase()}${key.slice(1)}Table`;

/** Every table in lib/kernel/tables.ts, configured the same way the definitions describe them. */
export class DataTables extends Construct {
  readonly tables: Record<TableKey, Table>;
  /** The customer-managed key of the card-tag tables. */
  readonly encryptionKey: Key;

  constructor(scope: Construct, id: string, props: DataTablesProps) {
    super(scope, id);
    this.encryptionKey = new Key(this, 'CardTagTablesKey', {
      description: `receipt-service ${props.stage}: DynamoDB tables holding card tags and webhook secrets`,
      enableKeyRotation: true,
      // The durable tables it encrypts outlive the stack, and are unreadable without it.
      removalPolicy: RemovalPolicy.RETAIN,
      policy: new PolicyDocument({
        statements: [
          keyAdministration(),
          // AWS's policy for a DynamoDB table key: principals of this account that IAM lets use it,
          // through DynamoDB only. CreateGrant is DynamoDB's own, made when a table is created.
          new PolicyStatement({
            sid: 'UseThroughDynamoDb',
            effect: Effect.ALLOW,
            principals: [new AccountRootPrincipal()],
            actions: [
              'kms:Encrypt',
              'kms:Decrypt',
              'kms:ReEncryptFrom',
              'kms:ReEncryptTo',
              'kms:GenerateDataKey',
              'kms:GenerateDataKeyWithoutPlaintext',
              'kms:CreateGrant',
              'kms:DescribeKey',
            ],
            resources: ['*'],
            conditions: dynamoViaService(),
          }),
        ],
      }),
    });
    const entries = tableKeys.map((key) => {
      const definition: TableDefinition = tableDefinitions[key];
      const table = new Table(this, logicalId(key), {
        tableName: `${props.prefix}-${definition.name}`,
        partitionKey: { name: definition.partitionKey, type: AttributeType.STRING },
        sortKey: definition.sortKey ? { name: definition.sortKey, type: AttributeType.STRING } : undefined,
        // On-demand: no capacity to pay for at rest, and no throttling to tune before launch.
        billingMode: BillingMode.PAY_PER_REQUEST,
        ...(customerKeyedTables.includes(key)
          ? { encryption: TableEncryption.CUSTOMER_MANAGED, encryptionKey: this.encryptionKey }
          : { encryption: TableEncryption.AWS_MANAGED }),
        timeToLiveAttribute: definition.ttlAttribute,
        ...(definition.stream ? { stream: StreamViewType[definition.stream] } : {}),
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: definition.durable },
        // Durable business data survives `cdk destroy` and a mistaken console delete; the rest is
        // short-lived (tokens, counters, idempotency records) and goes with the stack.
        deletionProtection: definition.durable,
        removalPolicy: definition.durable ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      });
      for (const index of definition.indexes ?? []) {
        table.addGlobalSecondaryIndex({
          indexName: index.name,
          partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
          sortKey: index.sortKey ? { name: index.sortKey, type: AttributeType.STRING } : undefined,
          // ALL unless declared otherwise: a keys-only index's readers get the item by its key.
          projectionType: index.projection === 'KEYS_ONLY' ? ProjectionType.KEYS_ONLY : ProjectionType.ALL,
        });
      }
      return [key, table] as const;
    });
    this.tables = Object.fromEntries(entries) as Record<TableKey, Table>;
  }

  isCustomerKeyed(key: TableKey): boolean {
    return customerKeyedTables.includes(key);
  }

  indexNames(key: TableKey): string[] {
    const definition: TableDefinition = tableDefinitions[key];
    return (definition.indexes ?? []).map((index) => index.name);
  }
}
