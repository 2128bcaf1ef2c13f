import { randomUUID } from 'node:crypto';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { cardTagPrefix } from '../../lib/crypto/card-tag.js';
import type { AuditLog } from '../../lib/db/audit.js';
import { transactWrite } from '../../lib/db/transact.js';
import { cardPk, userPk, type UserRecord } from '../../lib/db/users.js';

/**
 * User administration for the operator (`npm run admin -- users …`). A registration dispute (a 409
 * on register, alarmed) ends here: the operator, having checked with both clients which one issues
 * the card, unbinds the wrong registration and the rightful issuer registers the card.
 */
export interface UserAdminDeps {
  doc: DynamoDBDocumentClient;
  tables: { users: string; keyPairs: string };
  audit: AuditLog;
  now: () => Date;
}

export class UnknownUserError extends Error {}

export interface UnbindResult {
  userId: string;
  clientId: string;
  keyId: string;
  unboundAt: string;
}

/**
 * Removes a user and its card guard in one transaction, so the card can register again; its key
 * pair stays bound (and marked) so the same key cannot register another card. Receipts already
 * wrapped for the user stay with it: their key's holder could read them already. Nothing escrowed
 * moved at registration, so nothing needs moving back. Audited under the user's client.
 */
export async function unbindUser(deps: UserAdminDeps, userId: string, reason: string): Promise<UnbindResult> {
  const found = await deps.doc.send(
    new GetCommand({ TableName: deps.tables.users, Key: { pk: userPk(userId) }, ConsistentRead: true }),
  );
  if (!found.Item) throw new UnknownUserError(`No user ${userId}`);
  const user = found.Item as UserRecord & { pk: string };
  const unboundAt = deps.now().toISOString();
  const outcome = await transactWrite(deps.doc, {
    TransactItems: [
      {
        Delete: {
          TableName: deps.tables.users,
          Key: { pk: userPk(userId) },
          ConditionExpression: 'keyId = :keyId',
          ExpressionAttributeValues: { ':keyId': user.keyId },
        },
      },
      {
        Delete: {
          TableName: deps.tables.users,
          Key: { pk: cardPk(user.cardTag) },
          ConditionExpression: 'attribute_not_exists(pk) OR userId = :userId',
          ExpressionAttributeValues: { ':userId': userId },
        },
      },
      {
        Update: {
          TableName: deps.tables.keyPairs,
          Key: { keyId: user.keyId },
          UpdateExpression: 'SET unboundAt = :at',
          ExpressionAttributeValues: { ':at': unboundAt },
        },
      },
    ],
  });
  if (!outcome.ok) throw new Error('The user changed while it was being unbound; run the command again');
  await deps.audit.record({
    action: 'user.unbind',
    outcome: 'success',
    requestId: randomUUID(),
    clientId: user.clientId,
    userId,
    keyId: user.keyId,
    cardTagPrefix: cardTagPrefix(user.cardTag),
    reason: `operator: ${reason}`,
  });
  return { userId, clientId: user.clientId, keyId: user.keyId, unboundAt };
}
