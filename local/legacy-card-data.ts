/**
 * A data folder written before card tags holds hashedPans: users keyed `PAN#<hashedPan>` and carrying
 * it, escrowed receipts whose `pendingRecipient` is one, nested-form identifier hashes, and audit
 * records with `panHashPrefix`. `npm start` moves all of it to card tags before serving, so nothing
 * hashed from a card number is left in the folder and every registration and escrowed receipt is kept.
 */
import { ScanCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CardTagKeyring } from '../lib/crypto/card-tag.js';
import { openEnvelopeWith } from '../lib/crypto/envelope.js';
import type { EscrowKey } from '../lib/crypto/escrow.js';
import { transactWrite } from '../lib/db/transact.js';
import { cardPk } from '../lib/db/users.js';
import { claimFactsOf } from '../lib/receipts/encrypt.js';
import { digitalReceiptSchema } from '../lib/receipts/schemas.js';
import { tableDefinitions, type TableNames } from '../lib/kernel/tables.js';

const HASHED_PAN = /^[0-9a-f]{64}$/;

type Item = Record<string, unknown>;

export interface LegacyMigration {
  users: number;
  guards: number;
  receipts: number;
  identifiers: number;
  auditRecords: number;
}

async function* scan(doc: DynamoDBDocumentClient, table: string, filter: string): AsyncGenerator<Item> {
  let startKey: Item | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({ TableName: table, FilterExpression: filter, ExclusiveStartKey: startKey }),
    );
    yield* page.Items ?? [];
    startKey = page.LastEvaluatedKey;
  } while (startKey);
}

const keyOf = (item: Item, definition: { partitionKey: string; sortKey?: string }): Item => ({
  [definition.partitionKey]: item[definition.partitionKey],
  ...(definition.sortKey ? { [definition.sortKey]: item[definition.sortKey] } : {}),
});

export async function migrateLegacyCardData(input: {
  doc: DynamoDBDocumentClient;
  tables: Pick<TableNames, 'users' | 'receipts' | 'audit'>;
  keyring: CardTagKeyring;
  escrow: EscrowKey;
}): Promise<LegacyMigration> {
  const { doc, tables, keyring } = input;
  const done: LegacyMigration = { users: 0, guards: 0, receipts: 0, identifiers: 0, auditRecords: 0 };

  for await (const item of scan(doc, tables.users, 'attribute_exists(hashedPan)')) {
    const { hashedPan, ...rest } = item;
    if (typeof hashedPan !== 'string') continue;
    const cardTag = keyring.tagOf(hashedPan);
    if (String(item.pk).startsWith('PAN#')) {
      const outcome = await transactWrite(doc, {
        TransactItems: [
          { Put: { TableName: tables.users, Item: { ...rest, pk: cardPk(cardTag), cardTag } } },
          { Delete: { TableName: tables.users, Key: { pk: item.pk } } },
        ],
      });
      if (!outcome.ok) throw new Error(`could not move a card guard (${outcome.reasons.join(', ')})`);
      done.guards += 1;
    } else {
      await doc.send(
        new UpdateCommand({
          TableName: tables.users,
          Key: { pk: item.pk },
          UpdateExpression: 'SET cardTag = :tag REMOVE hashedPan',
          ExpressionAttributeValues: { ':tag': cardTag },
        }),
      );
      done.users += 1;
    }
  }

  const receiptKey = tableDefinitions.receipts as { partitionKey: string; sortKey?: string };
  for await (const item of scan(
    doc,
    tables.receipts,
    'attribute_exists(pendingRecipient) OR attribute_exists(recipientIdentifierHash)',
  )) {
    const pending = item.pendingRecipient;
    let set: Item = {};
    if (typeof pending === 'string' && HASHED_PAN.test(pending)) {
      // The claim facts are in the envelope only: the local escrow key opens it, here and nowhere else.
      const plaintext = await openEnvelopeWith(item.envelope, (key) => input.escrow.unwrap(key));
      const receipt = digitalReceiptSchema.parse(JSON.parse(plaintext.toString('utf8')));
      plaintext.fill(0);
      const cardTag = keyring.tagOf(pending);
      const facts = claimFactsOf(receipt);
      set = { pendingRecipient: cardTag, claimAt: facts.at, claimFacts: keyring.sealFacts(cardTag, facts) };
      done.receipts += 1;
    }
    if (item.recipientIdentifierHash !== undefined) done.identifiers += 1;
    const names = Object.keys(set);
    await doc.send(
      new UpdateCommand({
        TableName: tables.receipts,
        Key: keyOf(item, receiptKey),
        UpdateExpression: [
          names.length > 0 ? `SET ${names.map((name) => `${name} = :${name}`).join(', ')}` : '',
          'REMOVE recipientIdentifierHash',
        ]
          .filter(Boolean)
          .join(' '),
        ...(names.length > 0
          ? { ExpressionAttributeValues: Object.fromEntries(names.map((name) => [`:${name}`, set[name]])) }
          : {}),
      }),
    );
  }

  // The audit is append-only for the service; an 8-hex prefix of a hashedPan identifies a card within
  // a BIN, so the operator's migration removes it and keeps the rest of each record.
  for await (const item of scan(doc, tables.audit, 'attribute_exists(panHashPrefix)')) {
    await doc.send(
      new UpdateCommand({
        TableName: tables.audit,
        Key: { pk: item.pk, sk: item.sk },
        UpdateExpression: 'REMOVE panHashPrefix',
      }),
    );
    done.auditRecords += 1;
  }
  return done;
}
