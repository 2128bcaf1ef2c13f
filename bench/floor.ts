import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { AUDIT_SHARDS, auditPartition } from '../lib/db/audit.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Stripe from 'stripe';
import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../lib/kernel/clock.js';
import { cardTagPrefix, type CardTags } from '../lib/crypto/card-tag.js';
import { openEnvelope, transferEnvelope, type Recipient } from '../lib/crypto/envelope.js';
import type { EscrowKey } from '../lib/crypto/escrow.js';
import { lookupIdsOf, openEvidence } from '../lib/crypto/evidence.js';
import { matchesPublicKey, parsePrivateKey, parsePublicKey } from '../lib/crypto/keys.js';
import { receiptKeyOf, receiptRefOf } from '../lib/db/evidence.js';
import { cardPk, USER_CACHE_MAX_AGE_MS } from '../lib/db/users.js';
import { LruCache } from '../lib/kernel/lru.js';
import {
  paymentPk,
  refundSk,
  requestSk,
  type PaymentPartition,
  type PaymentRecord,
  type RefundRecord,
  type RefundRequestRecord,
} from '../lib/db/payments.js';
import { cardReferencesOf, providerIdempotencyKey } from '../lib/gateways/common.js';
import type { PaymentState } from '../lib/gateways/port.js';
import { refundedSoFar, saleStatus } from '../lib/payments/lifecycle.js';
import { amountRefund } from '../lib/payments/refund-amounts.js';
import { idempotencyBody } from '../lib/payments/create.js';
import { basisOf, derivedUuid, openBasis, sealBasis } from '../lib/payments/refund-basis.js';
import type { CreatePaymentBody } from '../lib/payments/schemas.js';
import type { PaymentStatus } from '../lib/kernel/payment-status.js';
import { receiptTableKey, type ReceiptEnvelope, type StoredReceipt } from '../lib/db/receipts.js';
import { boundDigest, claimFactsOf, digestOf } from '../lib/receipts/encrypt.js';
import { evidenceEntriesFor, evidenceMatches, tagsOfCard } from '../lib/receipts/evidence.js';
import type { DigitalReceipt } from '../lib/receipts/schemas.js';
import { toDigitalReceipt, type FlattenedReceipt } from '../lib/receipts/flattened.js';
import { sealReceiptEnvelope } from '../lib/receipts/seal.js';
import { refundReceiptOf } from '@receipt-service/receipt-core';

/**
 * The floor the service's CPU per request is compared with: a bare node:http handler per endpoint,
 * with no Middy, no zod, no API-key lookup, no rate limiting and no API Gateway event, that makes the
 * same DynamoDB calls (same tables, keys, conditions and item shapes as lib/db/ and Powertools'
 * idempotency layer write) and the same crypto (lib/crypto's functions), and for payments and refunds
 * the same call through the stripe SDK. Its request checks are the ones without which the result would
 * be wrong (the token's owner and expiry, the key's match, the payment's owner and what is left of it,
 * the claim allowance); a failed one answers a plain 4xx. The domain's pure rules (a flattened receipt's
 * mapping, a refund's amounts and its receipt's plaintext, the sale's status) are the service's own
 * functions: what the floor leaves out is the pipeline, not the arithmetic.
 */

export interface FloorTables {
  users: string;
  receipts: string;
  audit: string;
  accessTokens: string;
  transactions: string;
  idempotency: string;
  payments: string;
  merchantKeys: string;
  rateLimits: string;
  evidence: string;
}

export interface FloorOptions {
  /** Its own client (createDynamoClients), so the floor's connection pool is not the service's. */
  doc: DynamoDBDocumentClient;
  tables: FloorTables;
  clock: Clock;
  escrow: EscrowKey;
  /** The API-key clients the service would resolve from each caller's key. */
  clients: { merchant: string; issuer: string; payments: string };
  retention: { receiptDays: number; escrowDays: number; auditDays: number };
  /** The service's keyring cache (warm: in memory), for refund bases, evidence ids and allowances. */
  cardTags: CardTags;
  claims: { windowMinutes: number; dailyLimit: number };
  tokens: { ttlSeconds: number; maxActive: number };
  /** The gateway sandbox (GATEWAY_SANDBOX_URL), reached with the stripe SDK as the service does. */
  sandboxUrl: string;
}

export interface FloorServer {
  url: string;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/** The fields of a user's card guard (lib/db/users.ts's UserRecord) that a seal needs. */
interface RegisteredRecipient {
  userId: string;
  keyId: string;
  publicKey: string;
}

class FloorRefusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const isJson = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function field(record: Json, key: string): Json {
  const value = record[key];
  if (!isJson(value)) throw new FloorRefusal(400, `${key} must be an object`);
  return value;
}

function text(record: Json, key: string): string {
  const value = record[key];
  if (typeof value !== 'string' || value === '') throw new FloorRefusal(400, `${key} must be a string`);
  return value;
}

const optionalText = (record: Json, key: string): string | undefined =>
  typeof record[key] === 'string' ? record[key] : undefined;

const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
const DAY_MS = 86_400_000;

interface UserItem {
  userId: string;
  keyId: string;
  publicKey: string;
  clientId: string;
}

function asUser(item: Record<string, unknown> | undefined): UserItem | null {
  if (!item) return null;
  const { userId, keyId, publicKey, clientId } = item;
  return typeof userId === 'string' &&
    typeof keyId === 'string' &&
    typeof publicKey === 'string' &&
    typeof clientId === 'string'
    ? { userId, keyId, publicKey, clientId }
    : null;
}

export async function startFloorServer(options: FloorOptions): Promise<FloorServer> {
  const { doc, tables, clock } = options;
  let stripe: Promise<Stripe> | undefined;

  const readUser = async (pk: string): Promise<UserItem | null> =>
    asUser(
      (await doc.send(new GetCommand({ TableName: tables.users, Key: { pk }, ConsistentRead: true }))).Item,
    );

  const audit = (event: Json & { clientId: string; requestId: string }) => {
    const now = clock.now();
    return doc.send(
      new PutCommand({
        TableName: tables.audit,
        Item: {
          ...event,
          pk: auditPartition(event.clientId, randomInt(AUDIT_SHARDS)),
          sk: `${now.toISOString()}#${event.requestId}#${randomBytes(4).toString('hex')}`,
          at: now.toISOString(),
          ttl: Math.floor(now.getTime() / 1000) + options.retention.auditDays * 86_400,
        },
      }),
    );
  };

  const putIfAbsent = (tableName: string, item: Json, keyAttribute: string) =>
    doc.send(
      new PutCommand({
        TableName: tableName,
        Item: item,
        ConditionExpression: 'attribute_not_exists(#key)',
        ExpressionAttributeNames: { '#key': keyAttribute },
      }),
    );

  /**
   * The merchant's signing policy (lib/merchants/receipt-signature.ts's signingOf): the bench sends no
   * Receipt-Signature, so the policy is read, and a client that requires signatures is refused.
   */
  async function refuseUnsigned(clientId: string): Promise<void> {
    const policy = await doc.send(
      new GetCommand({
        TableName: tables.merchantKeys,
        Key: { pk: `POLICY#${clientId}` },
        ConsistentRead: true,
      }),
    );
    if (policy.Item?.requireSignatures === true) throw new FloorRefusal(400, 'a signature is required');
  }

  // The card's registered user, kept no longer than the service may keep it (USER_CACHE_MAX_AGE_MS,
  // lib/db/users.ts): that bound is what lets a key rotation or an erasure in another process take
  // effect within 30 s, so a floor that kept its recipients for the whole run would do less than the
  // same guarantees allow. Misses are not kept, as in the service.
  const recipients = new LruCache<string, RegisteredRecipient>(10_000, USER_CACHE_MAX_AGE_MS);
  async function recipientOf(cardTag: string): Promise<RegisteredRecipient | undefined> {
    const known = recipients.get(cardTag);
    if (known) return known;
    const found = await doc.send(
      new GetCommand({ TableName: tables.users, Key: { pk: cardPk(cardTag) }, ConsistentRead: true }),
    );
    if (!found.Item) return undefined;
    const user = found.Item as RegisteredRecipient;
    recipients.set(cardTag, user);
    return user;
  }

  /**
   * lib/receipts/encrypt.ts's encryptAndStore for a warm service: the card's tags (its registered user
   * read at most once per USER_CACHE_MAX_AGE_MS, as the service's recipient cache has it; the
   * merchantId's owner in memory), the seal, then the evidence entries and the receipt beside the
   * audit record.
   */
  async function sealAndStore(
    clientId: string,
    receipt: DigitalReceipt,
    hashedPan: string | undefined,
    requestDigest: string,
    requestId: string,
    paymentStatus?: PaymentStatus,
  ): Promise<ReceiptEnvelope> {
    const keyring = hashedPan ? await options.cardTags.keyring() : null;
    const cardTag = keyring && hashedPan ? (keyring.tagsOf(hashedPan)[0] ?? null) : null;
    const user = cardTag ? await recipientOf(cardTag) : undefined;
    const recipient: Recipient = user
      ? { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) }
      : { keyId: options.escrow.keyId, publicKey: await options.escrow.publicKey() };
    const sealed = sealReceiptEnvelope(receipt, recipient);
    const now = clock.now();
    const days = user ? options.retention.receiptDays : options.retention.escrowDays;
    const expiresAt = new Date(now.getTime() + days * DAY_MS);
    const envelope: ReceiptEnvelope = {
      ...sealed,
      createdAt: now.toISOString(),
      expiresAt: expiresAt.toISOString(),
      isEscrowed: !user,
      escrowKeyId: user ? null : options.escrow.keyId,
    };
    const ttl = Math.floor(expiresAt.getTime() / 1000);
    const stored: StoredReceipt = {
      receiptId: receipt.receiptId,
      envelope,
      merchantClientId: clientId,
      ...(user ? { recipientUserId: user.userId } : {}),
      requestDigest: boundDigest(requestDigest, cardTag),
      createdAt: now.toISOString(),
      ttl,
      ...(paymentStatus ? { paymentStatus } : {}),
    };
    const evidence =
      keyring && cardTag
        ? evidenceEntriesFor(keyring, {
            tag: cardTag,
            facts: claimFactsOf(receipt),
            receipt: stored,
            ttl,
            widthMs: options.claims.windowMinutes * 60_000,
            binding: stored.requestDigest,
          })
        : [];
    // As lib/db/receipts.ts's putIfAbsent: the entries first, each bound to the receipt's digest, then
    // the receipt (not one transaction, which bills every item twice).
    const storeReceipt = async () => {
      await Promise.all(
        evidence.map((entry) =>
          doc.send(
            new PutCommand({
              TableName: tables.evidence,
              Item: entry as unknown as Json,
              ConditionExpression: 'attribute_not_exists(evidenceId) OR binding = :binding',
              ExpressionAttributeValues: { ':binding': entry.binding },
            }),
          ),
        ),
      );
      // Naming its entries' ids, which a release and an erasure find them by (the table has no index).
      const evidenceIds =
        evidence.length > 0 ? { evidenceIds: new Set(evidence.map((e) => e.evidenceId)) } : {};
      await doc.send(
        new PutCommand({
          TableName: tables.receipts,
          Item: { ...stored, ...evidenceIds, ...receiptTableKey(stored) } as unknown as Json,
          ConditionExpression: 'attribute_not_exists(receiptId)',
        }),
      );
    };
    await Promise.all([
      storeReceipt(),
      audit({
        action: user ? 'receipt.encrypt' : 'escrow.wrap',
        outcome: 'success',
        requestId,
        clientId,
        receiptId: receipt.receiptId,
        transactionId: receipt.transaction.transactionId,
        keyId: recipient.keyId,
        ...(user ? { userId: user.userId } : { escrowKeyId: options.escrow.keyId }),
        ...(cardTag ? { cardTagPrefix: cardTagPrefix(cardTag) } : {}),
      }),
    ]);
    return envelope;
  }

  async function encrypt(body: Json, requestId: string): Promise<Json> {
    // Checked as the schema would; the service keeps nothing of it.
    field(body, 'recipientIdentifier');
    const clientId = options.clients.merchant;
    await refuseUnsigned(clientId);
    const envelope = await sealAndStore(
      clientId,
      field(body, 'receipt') as unknown as DigitalReceipt,
      optionalText(body, 'recipientHashedPan'),
      digestOf({ ...body, recipientIdentifier: undefined, recipientHashedPan: undefined }),
      requestId,
    );
    return { ...envelope };
  }

  async function decrypt(body: Json, requestId: string): Promise<Json> {
    const clientId = options.clients.issuer;
    const envelope = field(body, 'envelope');
    const tokenResult = await doc.send(
      new GetCommand({
        TableName: tables.accessTokens,
        Key: { pk: `TOKEN#${sha256Hex(text(body, 'accessTokenId'))}` },
        ConsistentRead: true,
      }),
    );
    const token = tokenResult.Item;
    if (
      !token ||
      typeof token.expiresAt !== 'string' ||
      Date.parse(token.expiresAt) <= clock.now().getTime() ||
      token.clientId !== clientId ||
      typeof token.userId !== 'string'
    )
      throw new FloorRefusal(403, 'token refused');
    const user = await readUser(`USER#${token.userId}`);
    if (!user || user.clientId !== clientId || user.keyId !== token.keyId || envelope.keyId !== token.keyId)
      throw new FloorRefusal(403, 'key refused');
    const privateKey = parsePrivateKey(text(body, 'privateKey'));
    if (!matchesPublicKey(privateKey, user.publicKey)) throw new FloorRefusal(403, 'key mismatch');
    const plaintext = openEnvelope(envelope, privateKey);
    const receipt: unknown = JSON.parse(plaintext.toString('utf8'));
    plaintext.fill(0);
    await audit({
      action: 'receipt.decrypt',
      outcome: 'success',
      requestId,
      clientId,
      userId: user.userId,
      keyId: user.keyId,
      receiptId: text(envelope, 'receiptId'),
      sourceIp: '127.0.0.1',
    });
    if (!isJson(receipt)) throw new FloorRefusal(403, 'not a receipt');
    return receipt;
  }

  async function grant(body: Json, requestId: string): Promise<Json> {
    const clientId = options.clients.issuer;
    const user = await readUser(`USER#${text(body, 'userId')}`);
    if (!user || user.clientId !== clientId || user.keyId !== text(body, 'keyId'))
      throw new FloorRefusal(403, 'grant refused');
    const now = clock.now();
    const tokenId = randomUUID();
    const tokenHash = sha256Hex(tokenId);
    const expiresAtIso = new Date(now.getTime() + options.tokens.ttlSeconds * 1000).toISOString();
    const expiresAt = Math.floor(Date.parse(expiresAtIso) / 1000);
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const record = {
      userId: user.userId,
      keyId: user.keyId,
      clientId,
      purpose: 'decrypt',
      grantedAt: now.toISOString(),
      expiresAt: expiresAtIso,
      sourceIp: '127.0.0.1',
    };
    // The service's slot scheme (lib/db/access-tokens.ts): a random first slot, then the next ones;
    // the slot claimed with one conditional put, then the token written with another.
    const { maxActive } = options.tokens;
    const start = Math.floor(Math.random() * maxActive);
    let granted = false;
    for (let offset = 0; offset < maxActive && !granted; offset += 1) {
      const slot = (start + offset) % maxActive;
      try {
        await doc.send(
          new PutCommand({
            TableName: tables.accessTokens,
            Item: { pk: `SLOT#${user.userId}#${slot}`, tokenHash, expiresAt, ttl: expiresAt },
            ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
            ExpressionAttributeValues: { ':now': nowSeconds },
          }),
        );
      } catch (error) {
        if (error instanceof Error && error.name === 'ConditionalCheckFailedException') continue;
        throw error;
      }
      await doc.send(
        new PutCommand({
          TableName: tables.accessTokens,
          Item: { pk: `TOKEN#${tokenHash}`, ...record, slot, ttl: expiresAt },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
      granted = true;
    }
    if (!granted) throw new FloorRefusal(429, 'no free slot');
    await audit({
      action: 'access.grant',
      outcome: 'success',
      requestId,
      clientId,
      userId: user.userId,
      keyId: user.keyId,
      sourceIp: '127.0.0.1',
    });
    const { clientId: _clientId, ...token } = record;
    return { tokenId, ...token };
  }

  /**
   * POST /payments/gateway_a/create, unsigned: the calls of lib/payments/create.ts inside Powertools'
   * idempotency record, in their order (the policy, the receipt with its evidence, the mapping
   * reserved, the charge, the mapping completed, the payment recorded with the sale's status).
   */
  async function createPayment(body: Json, requestId: string): Promise<Json> {
    const clientId = options.clients.payments;
    const receiptId = text(body, 'receiptId');
    const { amount, cardNonce: _cardNonce, ...receiptFields } = body;
    if (typeof amount !== 'number' || amount !== body.totalAmount)
      throw new FloorRefusal(400, 'amount must equal totalAmount');
    // Powertools' record (DynamoDBPersistenceLayer): in progress first, completed with the result after.
    const idempotencyKey = `create-payment#${createHash('md5').update(`${clientId}:receipt:${receiptId}`).digest('hex')}`;
    // What Powertools validates a repeat against: the request with its card as the card's tag.
    const validation = createHash('md5')
      .update(
        JSON.stringify(
          await idempotencyBody(
            { cardTags: options.cardTags },
            'gateway_a',
            body as unknown as CreatePaymentBody,
          ),
        ),
      )
      .digest('hex');
    const startedAt = Date.now();
    const expiry = Math.floor(startedAt / 1000) + 86_400;
    await doc.send(
      new PutCommand({
        TableName: tables.idempotency,
        Item: {
          id: idempotencyKey,
          expiration: expiry,
          status: 'INPROGRESS',
          in_progress_expiration: startedAt + 29_000,
          validation,
        },
        ExpressionAttributeNames: {
          '#id': 'id',
          '#expiry': 'expiration',
          '#in_progress_expiry': 'in_progress_expiration',
          '#status': 'status',
        },
        ExpressionAttributeValues: {
          ':now': startedAt / 1000,
          ':now_in_millis': startedAt,
          ':inprogress': 'INPROGRESS',
        },
        ConditionExpression:
          'attribute_not_exists(#id) OR #expiry < :now OR (#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    await refuseUnsigned(clientId);
    // A pure field mapping: the same plaintext as the service encrypts for this request.
    const receipt = toDigitalReceipt(receiptFields as unknown as FlattenedReceipt, clock.now());
    const transactionId = receipt.transaction.transactionId;
    const merchantId = receipt.merchant.merchantId;
    const envelope = await sealAndStore(
      clientId,
      receipt,
      optionalText(body, 'recipientHashedPan'),
      digestOf({ ...receiptFields, recipientHashedPan: undefined }),
      requestId,
      'pending',
    );
    // The mapping is reserved before the charge (lib/payments/create.ts) and completed after it.
    const reservedBy = sha256Hex(idempotencyKey);
    await putIfAbsent(
      tables.transactions,
      {
        mappingId: randomUUID(),
        transactionId,
        receiptId,
        paymentGateway: 'gateway_a',
        gatewayMetadataJson: JSON.stringify({ status: 'pending' }),
        createdAt: clock.now().toISOString(),
        merchantClientId: clientId,
        reservedBy,
      },
      'transactionId',
    );
    await audit({
      action: 'transaction.store',
      outcome: 'success',
      requestId,
      clientId,
      receiptId,
      transactionId,
    });
    const intent = await (
      await gatewayA()
    ).paymentIntents.create(
      {
        amount,
        currency: text(body, 'currency').toLowerCase(),
        metadata: { receiptId, transactionId, merchantId },
      },
      {
        idempotencyKey: `pi-${createHash('sha256')
          .update(sha256Hex(`${clientId}:${receiptId}`))
          .digest('base64url')
          .slice(0, 40)}`,
      },
    );
    await doc.send(
      new UpdateCommand({
        TableName: tables.transactions,
        Key: { merchantClientId: clientId, transactionId },
        UpdateExpression: 'SET paymentId = :paymentId, gatewayMetadataJson = :metadata',
        ConditionExpression: 'receiptId = :receiptId',
        ExpressionAttributeValues: {
          ':paymentId': intent.id,
          ':metadata': JSON.stringify({
            paymentId: intent.id,
            orderId: null,
            status: intent.status,
            amount: intent.amount,
            currency: intent.currency.toUpperCase(),
          }),
          ':receiptId': receiptId,
        },
      }),
    );
    // lib/payments/lifecycle.ts's recordCreatedPayment: the payment with its sealed refund basis, alone
    // (one conditional put) when the sale was stored with this status, else with the sale's status in
    // one transaction.
    const recorded = clock.now();
    // The adapter's intentState (lib/gateways/stripe.ts): only succeeded and canceled are final.
    const state: PaymentState =
      intent.status === 'succeeded' ? 'succeeded' : intent.status === 'canceled' ? 'canceled' : 'pending';
    const payment: PaymentRecord = {
      pk: paymentPk('gateway_a', intent.id),
      sk: 'PAYMENT',
      gateway: 'gateway_a',
      paymentId: intent.id,
      merchantClientId: clientId,
      receiptId,
      transactionId,
      merchantId,
      amount: intent.amount,
      currency: intent.currency.toUpperCase(),
      state,
      basis: sealBasis(await options.cardTags.keyring(), clientId, receiptId, basisOf(receipt)),
      version: 0,
      createdAt: recorded.toISOString(),
      updatedAt: recorded.toISOString(),
      ttl: Math.floor(recorded.getTime() / 1000) + options.retention.receiptDays * 86_400,
    };
    const paymentPut = {
      TableName: tables.payments,
      Item: payment,
      ConditionExpression: 'attribute_not_exists(pk)',
    };
    // The receipt was stored 'pending' above.
    if (state === 'pending') await doc.send(new PutCommand(paymentPut));
    else
      await doc.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: paymentPut },
            {
              Update: {
                TableName: tables.receipts,
                Key: receiptTableKey({ merchantClientId: clientId, receiptId }),
                UpdateExpression: 'SET paymentStatus = :status',
                ConditionExpression: 'attribute_exists(receiptId)',
                ExpressionAttributeValues: { ':status': state },
              },
            },
          ],
        }),
      );
    await audit({
      action: 'payment.create',
      outcome: 'success',
      requestId,
      clientId,
      receiptId,
      transactionId,
    });
    const result = {
      paymentId: intent.id,
      clientSecret: intent.client_secret,
      orderId: null,
      gateway: 'gateway_a',
      receiptMetadata: { receiptId, transactionId, merchantId, isEscrowed: envelope.isEscrowed },
      livemode: intent.livemode,
    };
    await doc.send(
      new UpdateCommand({
        TableName: tables.idempotency,
        Key: { id: idempotencyKey },
        UpdateExpression:
          'SET #expiry = :expiry, #status = :status, #response_data = :response_data, #validation_key = :validation_key',
        ExpressionAttributeNames: {
          '#expiry': 'expiration',
          '#status': 'status',
          '#response_data': 'data',
          '#validation_key': 'validation',
        },
        ExpressionAttributeValues: {
          ':expiry': expiry,
          ':status': 'COMPLETED',
          ':response_data': result,
          ':validation_key': validation,
        },
      }),
    );
    return result;
  }

  const queryAll = async (input: QueryCommandInput): Promise<Record<string, unknown>[]> => {
    const items: Record<string, unknown>[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const page = await doc.send(new QueryCommand({ ...input, ExclusiveStartKey: startKey }));
      items.push(...(page.Items ?? []));
      startKey = page.LastEvaluatedKey;
    } while (startKey);
    return items;
  };

  /** The payment's partition, read consistently (lib/db/payments.ts). */
  async function readPartition(pk: string): Promise<PaymentPartition | null> {
    const items = await queryAll({
      TableName: tables.payments,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    });
    const payment = items.find((item) => item.sk === 'PAYMENT') as PaymentRecord | undefined;
    if (!payment) return null;
    const kind = (prefix: string) => items.filter((item) => String(item.sk).startsWith(prefix));
    return {
      payment,
      refunds: kind('REFUND#') as unknown as RefundRecord[],
      requests: kind('REQUEST#') as unknown as RefundRequestRecord[],
    };
  }

  /** The payment's version check and raise, with `items`, in one transaction (PaymentRepository.commit). */
  async function commitPartition(payment: PaymentRecord, now: Date, items: Json[]): Promise<void> {
    try {
      await doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: tables.payments,
                Key: { pk: payment.pk, sk: 'PAYMENT' },
                UpdateExpression: 'SET version = :next, updatedAt = :now',
                ConditionExpression: 'version = :expected',
                ExpressionAttributeValues: {
                  ':expected': payment.version,
                  ':next': payment.version + 1,
                  ':now': now.toISOString(),
                },
              },
            },
            ...items,
          ],
        }),
      );
    } catch (error) {
      // One connection: nothing else changes the payment, so a failed condition is a floor bug.
      if (error instanceof Error && error.name === 'TransactionCanceledException')
        throw new FloorRefusal(409, 'the payment changed');
      throw error;
    }
  }

  const gatewayA = () => {
    stripe ??= import('stripe').then(({ default: StripeSdk }) => {
      const url = new URL(options.sandboxUrl);
      return new StripeSdk('sk_test_local_sandbox', {
        maxNetworkRetries: 2,
        timeout: 10_000,
        host: url.hostname,
        port: url.port,
        protocol: 'http',
      });
    });
    return stripe;
  };

  /**
   * POST /payments/gateway_a/{paymentId}/refunds, an amount refund without a signature: the calls of
   * lib/payments/refunds.ts and lifecycle.ts's recordRefund, in their order. The basis is opened once:
   * the service opens it again after the gateway call (an HKDF and an AES-GCM open of a few hundred
   * bytes), and a floor that repeated it would only hide that.
   */
  async function refund(paymentId: string, body: Json, requestId: string): Promise<Json> {
    const clientId = options.clients.payments;
    const refundId = text(body, 'refundId');
    const { amount } = body;
    if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1)
      throw new FloorRefusal(400, 'amount must be a positive integer');
    const reason = optionalText(body, 'reason');
    await refuseUnsigned(clientId);
    const pk = paymentPk('gateway_a', paymentId);
    const before = await readPartition(pk);
    if (!before || before.payment.merchantClientId !== clientId)
      throw new FloorRefusal(404, 'no such payment');
    const { payment } = before;
    // The floor makes first refunds only; the service's repeat handling is not what is compared.
    if (before.requests.some((request) => request.refundId === refundId))
      throw new FloorRefusal(409, 'refundId already used');
    const keyring = await options.cardTags.keyring();
    const basis = openBasis(keyring, payment.merchantClientId, payment.receiptId, payment.basis);
    const amounts = amountRefund(basis, refundedSoFar(before, true), amount);
    const paid = payment.state === 'succeeded' || before.refunds.length > 0;
    if (!paid || amounts.amount > payment.amount - refundedSoFar(before, true).amount)
      throw new FloorRefusal(400, 'more than is left of the payment');
    const requested = clock.now();
    const request: RefundRequestRecord = {
      pk,
      sk: requestSk(refundId),
      refundId,
      requestDigest: sha256Hex(JSON.stringify([amount, reason ?? null, null])),
      ...amounts,
      ...(reason ? { reason } : {}),
      createdAt: requested.toISOString(),
      ttl: payment.ttl,
    };
    await commitPartition(payment, requested, [
      { Put: { TableName: tables.payments, Item: request, ConditionExpression: 'attribute_not_exists(pk)' } },
    ]);

    const made = await (
      await gatewayA()
    ).refunds.create(
      {
        payment_intent: paymentId,
        amount: request.amount,
        metadata: { refundId, ...(reason ? { reason } : {}) },
      },
      { idempotencyKey: providerIdempotencyKey('rf', `${clientId}:gateway_a:${paymentId}:${refundId}`) },
    );
    const state = made.status === 'succeeded' ? 'succeeded' : made.status === 'failed' ? 'failed' : 'pending';

    // Recorded as lib/payments/lifecycle.ts records it: the partition again, the sale, the recipient.
    const after = await readPartition(pk);
    const pending = after?.requests.find((candidate) => candidate.refundId === refundId);
    if (!after || !pending) throw new FloorRefusal(409, 'the request is gone');
    const now = clock.now();
    const saleKey = receiptTableKey({
      merchantClientId: payment.merchantClientId,
      receiptId: payment.receiptId,
    });
    const sale = (
      await doc.send(new GetCommand({ TableName: tables.receipts, Key: saleKey, ConsistentRead: true }))
    ).Item;
    if (!sale || typeof sale.ttl !== 'number') throw new FloorRefusal(409, 'the sale is gone');
    const owner =
      typeof sale.recipientUserId === 'string' ? await readUser(`USER#${sale.recipientUserId}`) : null;
    if (typeof sale.recipientUserId === 'string' && !owner) throw new FloorRefusal(409, 'the user is gone');
    const recipient: Recipient = owner
      ? { keyId: owner.keyId, publicKey: parsePublicKey(owner.publicKey) }
      : { keyId: options.escrow.keyId, publicKey: await options.escrow.publicKey() };
    const record: RefundRecord = {
      pk,
      sk: refundSk(made.id),
      providerRefundId: made.id,
      refundId,
      amount: made.amount,
      currency: made.currency.toUpperCase(),
      state,
      receiptId: derivedUuid('refund-receipt', payment.merchantClientId, 'gateway_a', made.id),
      lines: pending.lines,
      subtotal: pending.subtotal,
      tax: pending.tax,
      source: 'api',
      sequence: after.payment.version + 1,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      ttl: payment.ttl,
    };
    // The refund's network references, sealed in its receipt as lib/payments/lifecycle.ts seals them
    // (lib/gateways/stripe.ts's toRefund reads them from the same answer).
    const card = made.destination_details?.card;
    const references = cardReferencesOf({
      acquirerReferenceNumber:
        card?.reference_type === 'acquirer_reference_number' ? card.reference : undefined,
      providerIds: {
        paymentIntentId: paymentId,
        chargeId: typeof made.charge === 'string' ? made.charge : made.charge?.id,
        refundId: made.id,
      },
    });
    const receipt: DigitalReceipt = {
      ...refundReceiptOf({
        receiptId: record.receiptId as string,
        saleReceiptId: payment.receiptId,
        basis,
        refundId,
        lines: record.lines,
        subtotal: record.subtotal,
        tax: record.tax,
        amount: record.amount,
        reason,
        createdAt: now,
      }),
      cardTransaction: { gateway: 'gateway_a', ...references },
    };
    // The seal with the receipt's bound fields, no more (lib/receipts/seal.ts's pure half).
    const sealed = sealReceiptEnvelope(receipt, recipient);
    const expiresAt = owner
      ? new Date(now.getTime() + options.retention.receiptDays * DAY_MS)
      : new Date(sale.ttl * 1000);
    const stored = {
      receiptId: receipt.receiptId,
      envelope: {
        ...sealed,
        createdAt: now.toISOString(),
        expiresAt: expiresAt.toISOString(),
        isEscrowed: !owner,
        escrowKeyId: owner ? null : options.escrow.keyId,
      },
      merchantClientId: payment.merchantClientId,
      ...(owner ? { recipientUserId: owner.userId } : {}),
      relatedReceiptId: payment.receiptId,
      paymentStatus: state,
      requestDigest: sha256Hex(`refund:${refundId}`),
      createdAt: now.toISOString(),
      ttl: Math.floor(expiresAt.getTime() / 1000),
    };
    await commitPartition(after.payment, now, [
      { Put: { TableName: tables.payments, Item: record, ConditionExpression: 'attribute_not_exists(pk)' } },
      { Put: { TableName: tables.payments, Item: { ...pending, providerRefundId: made.id } } },
      {
        Put: {
          TableName: tables.receipts,
          Item: { ...stored, ...receiptTableKey(stored) },
          ConditionExpression: 'attribute_not_exists(receiptId)',
        },
      },
      {
        Update: {
          TableName: tables.receipts,
          Key: saleKey,
          UpdateExpression:
            'SET paymentStatus = :status, refundReceiptIds = list_append(if_not_exists(refundReceiptIds, :none), :refund), lastRefundReceiptId = :cause',
          ConditionExpression: owner
            ? 'attribute_exists(receiptId) AND recipientUserId = :user'
            : 'attribute_exists(receiptId) AND envelope.isEscrowed = :escrowed',
          ExpressionAttributeValues: {
            ':status': saleStatus(after.payment.state, payment.amount, [...after.refunds, record]),
            ':none': [],
            ':refund': [stored.receiptId],
            ':cause': stored.receiptId,
            ...(owner ? { ':user': owner.userId } : { ':escrowed': true }),
          },
        },
      },
    ]);
    await audit({
      action: 'payment.refund',
      outcome: 'success',
      requestId,
      clientId: payment.merchantClientId,
      receiptId: stored.receiptId,
      transactionId: payment.transactionId,
      reason: `api refund ${refundId}: ${state}`,
    });
    return {
      refundId,
      paymentId,
      gateway: 'gateway_a',
      amount: record.amount,
      currency: record.currency,
      status: state,
      receiptId: record.receiptId,
      createdAt: record.createdAt,
    };
  }

  /**
   * POST /receipts/claim: the calls of lib/receipts/card-request.ts and claim.ts. The user, the card's
   * allowance (one conditional ADD), then per transaction one consistent look-up in the evidence
   * index, the receipts it points to, and for each escrowed one the escrow unwrap, the re-wrap for the
   * user's key, the conditional release, its evidence entries' new expiry, its audit record and the
   * sale read again for refund receipts to release with it; the request's audit record last.
   */
  async function claim(body: Json, requestId: string): Promise<Json> {
    const clientId = options.clients.issuer;
    const claimed = body.transactions;
    if (!Array.isArray(claimed) || claimed.length === 0 || claimed.length > 50 || !claimed.every(isJson))
      throw new FloorRefusal(400, 'transactions must be 1 to 50 objects');
    const nowMs = clock.now().getTime();
    const keptDays = Math.max(options.retention.receiptDays, options.retention.escrowDays);
    const transactions = claimed.map((transaction) => {
      const { amount } = transaction;
      const at = Date.parse(text(transaction, 'transactionDate'));
      if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount < 1)
        throw new FloorRefusal(400, 'amount must be a positive integer');
      if (!(at >= nowMs - keptDays * DAY_MS && at <= nowMs + DAY_MS))
        throw new FloorRefusal(400, 'transactionDate out of range');
      return {
        amount,
        currency: text(transaction, 'currency'),
        transactionDate: text(transaction, 'transactionDate'),
        cardLast4: optionalText(transaction, 'cardLast4'),
      };
    });
    const found = (
      await doc.send(
        new GetCommand({
          TableName: tables.users,
          Key: { pk: `USER#${text(body, 'userId')}` },
          ConsistentRead: true,
        }),
      )
    ).Item;
    const user = asUser(found);
    const cardTag = found?.cardTag;
    if (!user || typeof cardTag !== 'string' || user.clientId !== clientId)
      throw new FloorRefusal(404, 'no such user');
    const keyring = await options.cardTags.keyring();
    const now = clock.now();
    const nowSeconds = Math.floor(now.getTime() / 1000);
    const dayStart = nowSeconds - (nowSeconds % 86_400);
    const day = new Date(dayStart * 1000).toISOString().slice(0, 10);
    const { dailyLimit } = options.claims;
    try {
      await doc.send(
        new UpdateCommand({
          TableName: tables.rateLimits,
          Key: { pk: `CLAIMS#${keyring.allowanceSubject(cardTag)}#${clientId}#${day}` },
          UpdateExpression: 'ADD #used :count SET #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(#used) OR #used <= :room',
          ExpressionAttributeNames: { '#used': 'used', '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ':count': transactions.length,
            ':room': dailyLimit - transactions.length,
            ':ttl': dayStart + 2 * 86_400,
          },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
    } catch (error) {
      if (error instanceof Error && error.name === 'ConditionalCheckFailedException')
        throw new FloorRefusal(429, 'daily claim allowance spent');
      throw error;
    }
    const recipient: Recipient = { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) };
    const widthMs = options.claims.windowMinutes * 60_000;
    const tags = tagsOfCard({ cardTag }, keyring);
    const released = new Set<string>();
    const results: { transactionIndex: number; receiptIds: string[] }[] = [];
    for (const [transactionIndex, transaction] of transactions.entries()) {
      const refs = new Set<string>();
      for (const tag of tags) {
        const ids = lookupIdsOf(
          keyring,
          tag,
          { amount: transaction.amount, currency: transaction.currency, at: transaction.transactionDate },
          widthMs,
        );
        const partitions = await Promise.all(
          ids.map((id) =>
            queryAll({
              TableName: tables.evidence,
              KeyConditionExpression: 'evidenceId = :id',
              ExpressionAttributeValues: { ':id': id },
              ConsistentRead: true,
            }),
          ),
        );
        for (const entry of partitions.flat()) {
          const facts = openEvidence(
            keyring,
            String(entry.evidenceId),
            String(entry.receiptRef),
            String(entry.sealed),
          );
          if (evidenceMatches(facts, tag, transaction, widthMs)) refs.add(String(entry.receiptRef));
        }
      }
      const candidates = await Promise.all(
        [...refs].map(
          async (ref) =>
            (
              await doc.send(
                new GetCommand({
                  TableName: tables.receipts,
                  Key: receiptTableKey(receiptKeyOf(ref)),
                  ConsistentRead: true,
                }),
              )
            ).Item,
        ),
      );
      const receiptIds: string[] = [];
      for (const candidate of candidates) {
        if (!candidate || !isJson(candidate.envelope) || typeof candidate.envelope.createdAt !== 'string')
          continue;
        const key = {
          merchantClientId: String(candidate.merchantClientId),
          receiptId: String(candidate.receiptId),
        };
        const ref = receiptRefOf(key);
        if (released.has(ref) || candidate.envelope.isEscrowed !== true || candidate.recipientUserId)
          continue;
        const rewrapped = await transferEnvelope(
          candidate.envelope as unknown as Parameters<typeof transferEnvelope>[0],
          (encryptedKey) => options.escrow.unwrap(encryptedKey),
          recipient,
        );
        const expiresAt = new Date(
          Date.parse(candidate.envelope.createdAt) + options.retention.receiptDays * DAY_MS,
        );
        const ttl = Math.floor(expiresAt.getTime() / 1000);
        try {
          await doc.send(
            new UpdateCommand({
              TableName: tables.receipts,
              Key: receiptTableKey(key),
              UpdateExpression:
                'SET envelope = :envelope, recipientUserId = :user, #ttl = :ttl REMOVE pendingRecipient, claimAt, claimFacts',
              ConditionExpression:
                'envelope.isEscrowed = :escrowed AND attribute_not_exists(recipientUserId)',
              ExpressionAttributeNames: { '#ttl': 'ttl' },
              ExpressionAttributeValues: {
                ':envelope': {
                  ...candidate.envelope,
                  ...rewrapped,
                  isEscrowed: false,
                  escrowKeyId: null,
                  expiresAt: expiresAt.toISOString(),
                },
                ':user': user.userId,
                ':ttl': ttl,
                ':escrowed': true,
              },
            }),
          );
        } catch (error) {
          if (error instanceof Error && error.name === 'ConditionalCheckFailedException') continue;
          throw error;
        }
        // The receipt names its entries (lib/receipts/claim.ts reads them again, strongly consistent).
        const named = (
          await doc.send(
            new GetCommand({
              TableName: tables.receipts,
              Key: receiptTableKey(key),
              ProjectionExpression: 'evidenceIds',
              ConsistentRead: true,
            }),
          )
        ).Item?.evidenceIds;
        const entryKeys = [...((named as Set<string> | undefined) ?? [])].map((evidenceId) => ({
          evidenceId,
          receiptRef: ref,
        }));
        await Promise.all(
          entryKeys.map((entry) =>
            doc.send(
              new UpdateCommand({
                TableName: tables.evidence,
                Key: { evidenceId: entry.evidenceId, receiptRef: entry.receiptRef },
                UpdateExpression: 'SET #ttl = :ttl',
                ConditionExpression: 'attribute_exists(evidenceId)',
                ExpressionAttributeNames: { '#ttl': 'ttl' },
                ExpressionAttributeValues: { ':ttl': ttl },
              }),
            ),
          ),
        );
        await audit({
          action: 'escrow.claim',
          outcome: 'success',
          requestId,
          clientId: user.clientId,
          userId: user.userId,
          receiptId: key.receiptId,
          keyId: user.keyId,
          escrowKeyId: options.escrow.keyId,
        });
        // The sale read again for refund receipts escrowed with it (lib/receipts/claim.ts).
        const sale = (
          await doc.send(
            new GetCommand({ TableName: tables.receipts, Key: receiptTableKey(key), ConsistentRead: true }),
          )
        ).Item;
        if (Array.isArray(sale?.refundReceiptIds) && sale.refundReceiptIds.length > 0)
          throw new Error(
            'the claim floor releases no refund receipts: the bench claims receipts/encrypt receipts',
          );
        released.add(ref);
        receiptIds.push(key.receiptId);
      }
      results.push({ transactionIndex, receiptIds });
    }
    await audit({
      action: 'escrow.claim-request',
      outcome: 'success',
      requestId,
      clientId,
      userId: user.userId,
      cardTagPrefix: cardTagPrefix(cardTag),
      counts: { transactions: transactions.length, released: released.size },
    });
    return { userId: user.userId, results, released: released.size };
  }

  const handlers: Record<string, (body: Json, requestId: string) => Promise<Json>> = {
    '/api/v1/receipts/encrypt': encrypt,
    '/api/v1/receipts/decrypt': decrypt,
    '/api/v1/keys/grant-access': grant,
    '/api/v1/payments/gateway_a/create': createPayment,
    '/api/v1/receipts/claim': claim,
  };
  const refundPath = /^\/api\/v1\/payments\/gateway_a\/([^/]+)\/refunds$/;
  const handlerOf = (url: string): ((body: Json, requestId: string) => Promise<Json>) | undefined => {
    const paymentId = refundPath.exec(url)?.[1];
    return paymentId
      ? (body, requestId) => refund(decodeURIComponent(paymentId), body, requestId)
      : handlers[url];
  };

  const send = (res: ServerResponse, status: number, payload: unknown) => {
    const body = JSON.stringify(payload);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const handler = req.method === 'POST' ? handlerOf(req.url ?? '') : undefined;
    if (!handler) return send(res, 404, { error: 'not found' });
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (!isJson(parsed)) throw new FloorRefusal(400, 'body must be an object');
      send(res, 200, { data: await handler(parsed, randomUUID()) });
    } catch (error) {
      if (error instanceof FloorRefusal) send(res, error.status, { error: error.message });
      else if (error instanceof SyntaxError) send(res, 400, { error: 'invalid JSON' });
      else send(res, 500, { error: error instanceof Error ? error.name : 'error' });
    }
  }

  const server: Server = createServer((req, res) => void handle(req, res));
  // As the local server does: the load generator's connection is reused between requests.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
