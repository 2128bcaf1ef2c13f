import { AccountRootPrincipal, Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { TableAccess } from '../lib/kernel/route.js';
import type { TableKey } from '../lib/kernel/tables.js';

export type DynamoAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:BatchGetItem'
  | 'dynamodb:Query'
  | 'dynamodb:ConditionCheckItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:BatchWriteItem';

export interface TableOperations {
  /** What the service's code reads on the table itself, granted when a route reads it. */
  read: readonly DynamoAction[];
  /** What it reads on the table's indexes. */
  indexRead: readonly DynamoAction[];
  /** What it writes, granted when a route writes the table. */
  write: readonly DynamoAction[];
}

/**
 * The DynamoDB calls the functions' code makes on each table (lib/db/*, Powertools idempotency):
 * a route's 'read' or 'write' in functions/routes.ts grants only these, so declaring readWrite on a table
 * never adds a call nobody makes. test/infra/functions.test.ts reads lib/db and fails when the code
 * starts making a call that is missing here. The admin CLI runs with the operator's credentials:
 * its Scan, Put and Update on api-keys are not the functions'.
 */
export const tableOperations: Record<TableKey, TableOperations> = {
  apiKeys: { read: ['dynamodb:GetItem'], indexRead: [], write: [] },
  keyPairs: {
    read: ['dynamodb:GetItem'],
    indexRead: [],
    // Registering binds the key pair to its user inside the user's transaction; a key rotation marks
    // the old one retired there; an erasure deletes the user's pairs.
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  users: {
    read: ['dynamodb:GetItem'],
    indexRead: [],
    // A key rotation updates the user and its card guard; an erasure deletes both. Registering checks
    // that no guard holds the card under an older card-tag key version (ConditionCheck).
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem'],
  },
  accessTokens: {
    read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'],
    indexRead: [],
    // Revocation deletes a token and its slot.
    write: ['dynamodb:PutItem', 'dynamodb:DeleteItem'],
  },
  receipts: {
    // Its indexes hold keys only: an inbox page's receipts are read in one BatchGetItem.
    read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'],
    indexRead: ['dynamodb:Query'],
    // An erasure deletes the receipts wrapped for the user, 25 to a batch.
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:BatchWriteItem'],
  },
  transactions: {
    // The inbox reads a page's payment mappings in one BatchGetItem.
    read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'],
    // Issuers find a transactionId's mappings across merchant clients.
    indexRead: ['dynamodb:Query'],
    // Payment creation reserves the mapping before it charges and records the payment after.
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  // The evidence index: entries written just before their receipt (or 25 to a batch by the
  // backfill), read by id (a Query on the table), their expiry moved when the receipt is released,
  // deleted with it at an erasure (found by the ids the receipt carries: the table has no index).
  evidence: {
    read: ['dynamodb:Query'],
    indexRead: [],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:BatchWriteItem'],
  },
  // merchantId claims: a conditional put, and the owner read back when it fails.
  merchants: { read: ['dynamodb:GetItem'], indexRead: [], write: ['dynamodb:PutItem'] },
  // Every count is one atomic ADD whose result comes back with the update; the edge authorizer reads
  // a request's counters in one BatchGetItem to report them in API Gateway's own responses.
  rateLimits: { read: ['dynamodb:BatchGetItem'], indexRead: [], write: ['dynamodb:UpdateItem'] },
  // Append-only: no function may change or remove what the audit recorded, whatever its route says.
  audit: { read: [], indexRead: [], write: ['dynamodb:PutItem'] },
  // Webhook deliveries: created by a conditional put (a replayed stream record makes nothing new),
  // claimed and completed by conditional updates; listed and swept through their indexes.
  webhookDeliveries: {
    read: ['dynamodb:GetItem'],
    indexRead: ['dynamodb:Query'],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
  // Webhook registrations: created and deleted with their client's counter in one transaction,
  // listed through by-client, the secret rotated by a conditional update.
  webhooks: {
    read: ['dynamodb:GetItem'],
    indexRead: ['dynamodb:Query'],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // Powertools' DynamoDBPersistenceLayer: put the in-progress record, read it back on a conflict,
  // complete it, delete it when the handler fails.
  idempotency: {
    read: ['dynamodb:GetItem'],
    indexRead: [],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // A payment's partition is read whole (Query on the table, consistently) and changed in
  // transactions that raise its version; a refund request that the gateway refused is deleted.
  payments: {
    read: ['dynamodb:GetItem', 'dynamodb:Query'],
    indexRead: [],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // Merchant signing keys: registered by a conditional put (the kid read back when taken), revoked
  // by a conditional update, listed through by-client; the signing policy is one put item; a key
  // challenge's nonce is spent by a conditional delete (single use).
  merchantKeys: {
    read: ['dynamodb:GetItem'],
    indexRead: ['dynamodb:Query'],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  },
  // Append-only: no DeleteItem, ever. Proofs read their nodes in one BatchGetItem.
  keyLog: {
    read: ['dynamodb:GetItem', 'dynamodb:BatchGetItem'],
    indexRead: [],
    write: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
  },
};

export const canRead = (access: TableAccess): boolean => access === 'read' || access === 'readWrite';
export const canWrite = (access: TableAccess): boolean => access === 'write' || access === 'readWrite';

export function tableActions(key: TableKey, access: TableAccess): DynamoAction[] {
  const operations = tableOperations[key];
  return [...(canRead(access) ? operations.read : []), ...(canWrite(access) ? operations.write : [])];
}

/** The statements one function needs on one table: the table itself, plus its indexes when it reads. */
export function tableStatements(
  key: TableKey,
  access: TableAccess,
  tableArn: string,
  indexNames: readonly string[],
): PolicyStatement[] {
  const statements: PolicyStatement[] = [];
  const actions = tableActions(key, access);
  if (actions.length > 0) {
    statements.push(new PolicyStatement({ effect: Effect.ALLOW, actions, resources: [tableArn] }));
  }
  const indexActions = tableOperations[key].indexRead;
  if (canRead(access) && indexActions.length > 0 && indexNames.length > 0) {
    statements.push(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: [...indexActions],
        resources: indexNames.map((name) => `${tableArn}/index/${name}`),
      }),
    );
  }
  return statements;
}

/**
 * KMS use of a function on a table encrypted under a customer-managed key: DynamoDB decrypts the
 * table key with the caller's identity. The same actions CDK's own table grants give, spelt out (no
 * wildcards), and only through DynamoDB (see data-tables.ts).
 */
export const tableKeyReadActions = ['kms:Decrypt', 'kms:DescribeKey'] as const;
export const tableKeyWriteActions = [
  ...tableKeyReadActions,
  'kms:Encrypt',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
] as const;

/** Escrow use in functions/routes.ts: wrapping reads the public key locally, unwrapping asks KMS to decrypt. */
export function escrowActions(escrow: 'wrap' | 'wrapAndUnwrap' | undefined): string[] {
  if (!escrow) return [];
  const wrap = ['kms:GetPublicKey', 'kms:DescribeKey'];
  return escrow === 'wrapAndUnwrap' ? [...wrap, 'kms:Decrypt'] : wrap;
}

/**
 * What the account keeps on a key it owns: everything CloudFormation and an operator need to manage,
 * rotate, tag or schedule the deletion of the key, and nothing that uses it. CreateGrant is left out
 * too: a grant is another way to hand out Decrypt. `Put*` (PutKeyPolicy) stays: without it the key
 * could never be managed again; whoever may rewrite the policy is who can open escrow, which
 * docs/DEPLOY.md says.
 */
export const keyAdministrationActions = [
  'kms:CreateAlias',
  'kms:Describe*',
  'kms:Enable*',
  'kms:List*',
  'kms:Put*',
  'kms:Update*',
  'kms:Revoke*',
  'kms:Disable*',
  'kms:Get*',
  'kms:Delete*',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:ScheduleKeyDeletion',
  'kms:CancelKeyDeletion',
] as const;

/** The key-policy statement that leaves the account the administration of a key, and only that. */
export const keyAdministration = (): PolicyStatement =>
  new PolicyStatement({
    sid: 'AccountAdministersTheKey',
    effect: Effect.ALLOW,
    principals: [new AccountRootPrincipal()],
    actions: [...keyAdministrationActions],
    resources: ['*'],
  });
