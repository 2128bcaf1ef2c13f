import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { TableAccess } from '../lib/routes.js';

/**
 * DynamoDB actions per access mode in lib/routes.ts. ConditionCheckItem is a read (it only tests an
 * item inside TransactWriteItems), so it comes with read access; the transactions the service runs
 * otherwise need only the Put/Update/Delete actions of their items. Scan is never granted: no code
 * path lists a table.
 */
export const readActions = [
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:BatchGetItem',
  'dynamodb:ConditionCheckItem',
] as const;

export const writeActions = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
] as const;

/** Indexes are only ever queried. */
export const indexReadActions = ['dynamodb:Query'] as const;

export const canRead = (access: TableAccess): boolean => access === 'read' || access === 'readWrite';
export const canWrite = (access: TableAccess): boolean => access === 'write' || access === 'readWrite';

export function tableActions(access: TableAccess): string[] {
  return [...(canRead(access) ? readActions : []), ...(canWrite(access) ? writeActions : [])];
}

/** The statements one function needs on one table: the table itself, plus its named indexes when it reads. */
export function tableStatements(
  access: TableAccess,
  tableArn: string,
  indexNames: readonly string[],
): PolicyStatement[] {
  const statements = [
    new PolicyStatement({ effect: Effect.ALLOW, actions: tableActions(access), resources: [tableArn] }),
  ];
  if (canRead(access) && indexNames.length > 0) {
    statements.push(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...indexReadActions],
        resources: indexNames.map((name) => `${tableArn}/index/${name}`),
      }),
    );
  }
  return statements;
}

/** Escrow use in lib/routes.ts: wrapping reads the public key locally, unwrapping asks KMS to decrypt. */
export function escrowActions(escrow: 'wrap' | 'wrapAndUnwrap' | undefined): string[] {
  if (!escrow) return [];
  const wrap = ['kms:GetPublicKey', 'kms:DescribeKey'];
  return escrow === 'wrapAndUnwrap' ? [...wrap, 'kms:Decrypt'] : wrap;
}
