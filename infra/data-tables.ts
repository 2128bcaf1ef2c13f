import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table, TableEncryption } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { tableDefinitions, tableKeys, type TableDefinition, type TableKey } from '../lib/tables.js';

export interface DataTablesProps {
  /** Physical names are `${prefix}-${definition.name}`, so operators and the admin CLI can find them. */
  prefix: string;
}

const logicalId = (key: TableKey): string => `${key.charAt(0).toUpperCase()}${key.slice(1)}Table`;

/** Every table in lib/tables.ts, configured the same way the definitions describe them. */
export class DataTables extends Construct {
  readonly tables: Record<TableKey, Table>;

  constructor(scope: Construct, id: string, props: DataTablesProps) {
    super(scope, id);
    const entries = tableKeys.map((key) => {
      const definition: TableDefinition = tableDefinitions[key];
      const table = new Table(this, logicalId(key), {
        tableName: `${props.prefix}-${definition.name}`,
        partitionKey: { name: definition.partitionKey, type: AttributeType.STRING },
        sortKey: definition.sortKey ? { name: definition.sortKey, type: AttributeType.STRING } : undefined,
        // On-demand: no capacity to pay for at rest, and no throttling to tune before launch.
        billingMode: BillingMode.PAY_PER_REQUEST,
        encryption: TableEncryption.AWS_MANAGED,
        timeToLiveAttribute: definition.ttlAttribute,
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
          // The readers of the sparse escrow index re-wrap whole receipts, so they need every attribute.
          projectionType: ProjectionType.ALL,
        });
      }
      return [key, table] as const;
    });
    this.tables = Object.fromEntries(entries) as Record<TableKey, Table>;
  }

  indexNames(key: TableKey): string[] {
    const definition: TableDefinition = tableDefinitions[key];
    return (definition.indexes ?? []).map((index) => index.name);
  }
}
