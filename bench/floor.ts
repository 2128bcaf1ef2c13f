import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto';
import { AUDIT_SHARDS, auditPartition } from '../lib/db/audit.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Stripe from 'stripe';
import {
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { Clock } from '../lib/kernel/clock.js';
import { openEnvelope, sealEnvelope, type Recipient } from '../lib/crypto/envelope.js';
import type { EscrowKey } from '../lib/crypto/escrow.js';
import { matchesPublicKey, parsePrivateKey, parsePublicKey } from '../lib/crypto/keys.js';
import { toDigitalReceipt, type FlattenedReceipt } from '../lib/receipts/flattened.js';

/**
 * The floor the service's CPU per request is compared with: a bare node:http handler per endpoint,
 * with no Middy, no zod, no API-key lookup, no rate limiting and no API Gateway event, that makes the
 * same DynamoDB calls (same tables, keys, conditions and item shapes as lib/db/ and Powertools'
 * idempotency layer write) and the same crypto (lib/crypto's functions), and for payments the same
 * call through the stripe SDK. Its request checks are the ones without which the result would be
 * wrong (the token's owner and expiry, the key's match); a failed one answers a plain 4xx.
 */

export interface FloorTables {
  users: string;
  receipts: string;
  audit: string;
  accessTokens: string;
  transactions: string;
  idempotency: string;
}

export interface FloorOptions {
  /** Its own client (createDynamoClients), so the floor's connection pool is not the service's. */
  doc: DynamoDBDocumentClient;
  tables: FloorTables;
  clock: Clock;
  escrow: EscrowKey;
  /** The API-key clients the service would resolve from each caller's key. */
  clients: { merchant: string; issuer: string };
  retention: { receiptDays: number; escrowDays: number; auditDays: number };
  tokens: { ttlSeconds: number; maxActive: number };
  /** The gateway sandbox (GATEWAY_SANDBOX_URL), reached with the stripe SDK as the service does. */
  sandboxUrl: string;
  /**
   * Registered recipients by hashedPan, as the bench registered them: a warm service finds them in
   * its memory (lib/db/users.ts), so a warm encrypt reads no user, and neither does the floor.
   */
  recipients: ReadonlyMap<string, { userId: string; keyId: string; publicKey: string }>;
}

/**
 * The floors still to write, for endpoints that other branches bring (issue 23: each gets a floor of
 * its own and the 1.2× CPU target). Each becomes one more entry of `handlers` below, and one
 * EndpointPlan in bench/http.ts under the name bench/per-request.ts lists. Like the others, a floor
 * makes exactly the service's DynamoDB calls (same tables, keys, conditions, item shapes), its crypto
 * through lib/crypto and its gateway call through the stripe SDK, with no Middy, zod, API-key lookup
 * or rate limit; and the bench checks that what it writes is usable by the service.
 */
export const pendingFloors = {
  'payments/gateway_a/refund':
    'POST /api/v1/payments/gateway_a/{paymentId}/refunds (issue 21): read the payment mapping (merchant client ' +
    '+ payment id), reserve the refund under its refundId (conditional put, the idempotency key), call ' +
    'stripe.refunds.create with the derived idempotency key, build the refund DigitalReceipt and seal it ' +
    "with sealEnvelope for the sale's recipient (or escrow), store it with the conditional put the service " +
    "uses, update the sale's paymentStatus, and write the refund and payment audit records",
  'receipts/claim':
    "POST /api/v1/users/{userId}/receipts/claim (issue 20): read the user, spend the card's and the issuer " +
    "client's daily allowances (conditional ADDs), compute the keyed evidence entries for each claimed " +
    'transaction (HMAC under the key derived from the card-tag key, over card tag + amount + currency + ' +
    'time bucket and its neighbours) and read them with one BatchGetItem, unseal the matching escrowed ' +
    "receipts' keys (the escrow unwrap) and re-wrap each for the user's key (rewrapEnvelope), store each " +
    'with its conditional update, and write the claim audit record',
} as const;

export interface FloorServer {
  url: string;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

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

  async function sealAndStore(
    receipt: Json,
    hashedPan: string | undefined,
    extra: Json,
    requestId: string,
  ): Promise<Json> {
    const clientId = options.clients.merchant;
    const user = hashedPan ? options.recipients.get(hashedPan) : undefined;
    const recipient: Recipient = user
      ? { keyId: user.keyId, publicKey: parsePublicKey(user.publicKey) }
      : { keyId: options.escrow.keyId, publicKey: await options.escrow.publicKey() };
    const receiptId = text(receipt, 'receiptId');
    const transactionId = text(field(receipt, 'transaction'), 'transactionId');
    const sealed = sealEnvelope(
      Buffer.from(JSON.stringify(receipt), 'utf8'),
      {
        version: text(receipt, 'version'),
        receiptId,
        merchantId: text(field(receipt, 'merchant'), 'merchantId'),
        transactionId,
      },
      recipient,
    );
    const now = clock.now();
    const days = user ? options.retention.receiptDays : options.retention.escrowDays;
    const expiresAt = new Date(now.getTime() + days * DAY_MS);
    const envelope = {
      ...sealed,
      createdAt: now.toISOString(),
      expiresAt: expiresAt.toISOString(),
      isEscrowed: !user,
      escrowKeyId: user ? null : options.escrow.keyId,
    };
    await Promise.all([
      putIfAbsent(
        tables.receipts,
        {
          receiptId,
          envelope,
          merchantClientId: clientId,
          ...(user ? { recipientUserId: user.userId } : {}),
          ...(!user && hashedPan ? { pendingRecipient: hashedPan } : {}),
          ...extra,
          createdAt: now.toISOString(),
          ttl: Math.floor(expiresAt.getTime() / 1000),
        },
        'receiptId',
      ),
      audit({
        action: user ? 'receipt.encrypt' : 'escrow.wrap',
        outcome: 'success',
        requestId,
        clientId,
        receiptId,
        transactionId,
        keyId: recipient.keyId,
        ...(user ? { userId: user.userId } : { escrowKeyId: options.escrow.keyId }),
        ...(hashedPan ? { panHashPrefix: hashedPan.slice(0, 8) } : {}),
      }),
    ]);
    return envelope;
  }

  async function encrypt(body: Json, requestId: string): Promise<Json> {
    // Checked as the schema would; the service keeps nothing of it.
    field(body, 'recipientIdentifier');
    return sealAndStore(
      field(body, 'receipt'),
      optionalText(body, 'recipientHashedPan'),
      { requestDigest: sha256Hex(JSON.stringify(body)) },
      requestId,
    );
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
    // The service's slot scheme (lib/db/access-tokens.ts): a random first slot, then the next ones.
    const { maxActive } = options.tokens;
    const start = Math.floor(Math.random() * maxActive);
    let granted = false;
    for (let offset = 0; offset < maxActive && !granted; offset += 1) {
      const slot = (start + offset) % maxActive;
      try {
        await doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName: tables.accessTokens,
                  Item: { pk: `SLOT#${user.userId}#${slot}`, tokenHash, expiresAt, ttl: expiresAt },
                  ConditionExpression: 'attribute_not_exists(pk) OR expiresAt <= :now',
                  ExpressionAttributeValues: { ':now': nowSeconds },
                },
              },
              {
                Put: {
                  TableName: tables.accessTokens,
                  Item: { pk: `TOKEN#${tokenHash}`, ...record, slot, ttl: expiresAt },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            ],
          }),
        );
        granted = true;
      } catch (error) {
        if (!(error instanceof Error && error.name === 'TransactionCanceledException')) throw error;
      }
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

  async function createPayment(body: Json, requestId: string): Promise<Json> {
    const clientId = options.clients.merchant;
    const receiptId = text(body, 'receiptId');
    const { amount, cardNonce: _cardNonce, ...receiptFields } = body;
    if (typeof amount !== 'number' || amount !== body.totalAmount)
      throw new FloorRefusal(400, 'amount must equal totalAmount');
    // Powertools' record (DynamoDBPersistenceLayer): in progress first, completed with the result after.
    const idempotencyKey = `create-payment#${createHash('md5').update(`${clientId}:receipt:${receiptId}`).digest('hex')}`;
    const validation = createHash('md5').update(JSON.stringify(body)).digest('hex');
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
    // A pure field mapping: the same plaintext as the service encrypts for this request.
    const receipt = toDigitalReceipt(receiptFields as unknown as FlattenedReceipt, clock.now());
    const transactionId = receipt.transaction.transactionId;
    const merchantId = receipt.merchant.merchantId;
    const envelope = await sealAndStore(
      receipt as unknown as Json,
      optionalText(body, 'recipientHashedPan'),
      { requestDigest: sha256Hex(JSON.stringify(receiptFields)) },
      requestId,
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
    const intent = await (
      await stripe
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

  const handlers: Record<string, (body: Json, requestId: string) => Promise<Json>> = {
    '/api/v1/receipts/encrypt': encrypt,
    '/api/v1/receipts/decrypt': decrypt,
    '/api/v1/keys/grant-access': grant,
    '/api/v1/payments/gateway_a/create': createPayment,
  };

  const send = (res: ServerResponse, status: number, payload: unknown) => {
    const body = JSON.stringify(payload);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const handler = req.method === 'POST' ? handlers[req.url ?? ''] : undefined;
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
