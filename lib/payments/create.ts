import { createHash, randomUUID } from 'node:crypto';
import type { Caller } from '../api-keys/authenticator.js';
import type { AppDeps } from '../app/deps.js';
import type { ReceiptEnvelope } from '../db/receipts.js';
import type { TransactionMappingRecord } from '../db/transactions.js';
import { AppError, ConflictError, InvalidRequestError } from '../kernel/errors.js';
import { PaymentDeclinedError } from '../gateways/vocabulary.js';
import type { GatewayKind, PaymentGateway } from '../gateways/port.js';
import type { PaymentFailure } from './vocabulary.js';
import { digestOf, encryptAndStore } from '../receipts/encrypt.js';
import { receiptOfFlattened } from '../receipts/flattened.js';
import { sealedWithSignature, signingOf } from '../merchants/receipt-signature.js';
import { sealedWithCredential } from '../merchants/receipt-credential.js';
import { putMapping } from '../transactions/transactions.js';
import { openRecord, sealRecord } from '../crypto/sealed-record.js';
import { sealCardTransaction } from './card-transaction.js';
import { recordCreatedPayment } from './lifecycle.js';
import type { CreatePaymentBody } from './schemas.js';

export type PaymentDeps = Omit<AppDeps, never>;

/** Spec: PaymentResult, plus the gateway kind the flow carries to step 5. */
export interface PaymentResult {
  paymentId: string;
  clientSecret: string | null;
  orderId: string | null;
  gateway: GatewayKind;
  receiptMetadata: { receiptId: string; transactionId: string; merchantId: string; isEscrowed: boolean };
  /** Whether real money moved (DECISIONS Round 3: every payment response says so). */
  livemode: boolean;
}

/**
 * A PaymentResult as the idempotency table keeps it for repeats: gateway_a's clientSecret (which
 * confirms the payment) sealed under a key derived from the card-tag key, bound to the payment, so
 * a copy of the table holds none in clear.
 */
export interface StoredPaymentResult extends Omit<PaymentResult, 'clientSecret'> {
  clientSecret: null;
  sealedClientSecret?: string;
}

const CLIENT_SECRET_PURPOSE = 'payment-client-secret';
const clientSecretContext = (result: Pick<PaymentResult, 'gateway' | 'paymentId'>) =>
  `${result.gateway}#${result.paymentId}`;

export async function storedForRepeats(
  deps: Pick<AppDeps, 'cardTags'>,
  result: PaymentResult,
): Promise<StoredPaymentResult> {
  const { clientSecret, ...rest } = result;
  if (clientSecret === null) return { ...rest, clientSecret: null };
  const keyring = await deps.cardTags.keyring();
  return {
    ...rest,
    clientSecret: null,
    sealedClientSecret: sealRecord(keyring, CLIENT_SECRET_PURPOSE, clientSecretContext(result), clientSecret),
  };
}

/** The result a caller gets, first time or repeat: its clientSecret opened again. */
export async function openedFromStore(
  deps: Pick<AppDeps, 'cardTags'>,
  stored: StoredPaymentResult,
): Promise<PaymentResult> {
  const { sealedClientSecret, ...rest } = stored;
  if (sealedClientSecret === undefined) return rest;
  const keyring = await deps.cardTags.keyring();
  const clientSecret = openRecord<string>(
    keyring,
    CLIENT_SECRET_PURPOSE,
    clientSecretContext(stored),
    sealedClientSecret,
  );
  // A record that does not open is damage, not a caller's mistake.
  if (clientSecret === undefined) throw new Error("the stored payment's clientSecret does not open");
  return { ...rest, clientSecret };
}

/**
 * What is charged: for gateway_a the request's `amount`, which must equal totalAmount; for gateway_b
 * the items plus tax (already checked to equal totalAmount), with `amount` optional but consistent.
 */
export function chargedAmount(kind: GatewayKind, body: CreatePaymentBody): number {
  const fields: { field: string; message: string }[] = [];
  if (kind === 'gateway_a' && body.amount === undefined)
    fields.push({ field: 'amount', message: 'is required for gateway_a' });
  if (body.amount !== undefined && body.amount !== body.totalAmount) {
    fields.push({ field: 'amount', message: `must equal totalAmount (${body.totalAmount})` });
  }
  if (body.totalAmount <= 0)
    fields.push({ field: 'totalAmount', message: 'must be greater than zero to charge a payment' });
  if (kind !== 'gateway_a' && body.paymentMethodId !== undefined)
    fields.push({ field: 'paymentMethodId', message: 'is for gateway_a only (gateway_b takes cardNonce)' });
  if (fields.length > 0) throw new InvalidRequestError('Invalid request body', fields);
  return body.totalAmount;
}

export async function configuredGateway(
  deps: Pick<AppDeps, 'gateways'>,
  kind: GatewayKind,
): Promise<PaymentGateway> {
  if (!deps.gateways.configured().includes(kind)) {
    throw new InvalidRequestError(`Gateway ${kind} is not configured on this deployment`, [
      { field: 'gateway', message: `must be one of: ${deps.gateways.configured().join(', ') || '(none)'}` },
    ]);
  }
  return deps.gateways.get(kind);
}

/**
 * What Powertools' idempotency record validates a repeat against (it stores a hash of it): the
 * request with its card as the card's tag, never the hashedPan, whose unkeyed hash a table copy gave
 * back by brute force (issue 20). A repeat across a card-tag key rotation then differs: a 409 for that
 * one request, within the 24 hours the record lives.
 */
export async function idempotencyBody(
  deps: Pick<AppDeps, 'cardTags'>,
  kind: GatewayKind,
  body: CreatePaymentBody,
): Promise<Record<string, unknown>> {
  const { recipientHashedPan, ...rest } = body;
  const recipientCard = recipientHashedPan ? (await deps.cardTags.keyring()).tagOf(recipientHashedPan) : null;
  return { kind, ...rest, recipientCard };
}

/** A decline is the card's answer, a refusal the provider's verdict on the request, an error its outage. */
const paymentFailure = (error: unknown): PaymentFailure =>
  error instanceof PaymentDeclinedError
    ? 'declined'
    : error instanceof AppError && error.status < 500
      ? 'refused'
      : 'error';

const ONE_PAYMENT = 'a merchant makes one payment per receipt';

/**
 * The 409 for a create that repeats an earlier one's key with a different body. Without an
 * Idempotency-Key the key was the receiptId, so the receipt is what is taken: the error names its
 * payment and says why, and speaks of an Idempotency-Key only when the client sent one.
 */
export function repeatedPaymentConflict(
  first: Pick<PaymentResult, 'paymentId' | 'gateway'> | undefined,
  idempotencyKeySent: boolean,
): ConflictError {
  const payment = first ? ` (${first.paymentId} on ${first.gateway})` : '';
  const named = first ? { paymentId: first.paymentId, paymentGateway: first.gateway } : {};
  if (idempotencyKeySent) {
    return new ConflictError(
      `This Idempotency-Key was already used with a different request body; its payment${payment} stands`,
      { field: 'Idempotency-Key', ...named },
    );
  }
  return new ConflictError(
    `This receipt already has a payment${payment}: ${ONE_PAYMENT}. This request differs from the one that ` +
      'made it; repeat that one exactly to get its result, or send a new receiptId for a new payment',
    { field: 'receiptId', ...named },
  );
}

/**
 * One payment per (merchant client, receiptId), whatever the gateway or Idempotency-Key: the
 * mapping of the receipt's transaction is written before the charge. Only the request that wrote it
 * (the same idempotency key, retried after a crash) may go on to charge; anything else is refused here.
 */
async function reserveMapping(
  deps: PaymentDeps,
  input: {
    kind: GatewayKind;
    envelope: ReceiptEnvelope;
    caller: Caller;
    reservedBy: string;
    requestId: string;
  },
): Promise<void> {
  const { envelope, caller, kind } = input;
  const record: TransactionMappingRecord = {
    mappingId: randomUUID(),
    transactionId: envelope.transactionId,
    receiptId: envelope.receiptId,
    paymentGateway: kind,
    gatewayMetadata: { status: 'pending' },
    createdAt: deps.clock.now().toISOString(),
    merchantClientId: caller.clientId,
    reservedBy: input.reservedBy,
  };
  const outcome = await putMapping(deps, record, input.requestId);
  if (outcome.stored) return;
  // The mapping found is this client's own: transactionIds are unique per merchant client only.
  const { existing } = outcome;
  const sameReceipt = existing.receiptId === record.receiptId;
  if (sameReceipt && existing.reservedBy === input.reservedBy && existing.paymentGateway === kind) return;
  if (sameReceipt) {
    throw new ConflictError(
      existing.paymentId
        ? `This receipt already has a payment (${existing.paymentId} on ${existing.paymentGateway}): ${ONE_PAYMENT}`
        : `A payment for this receipt is already being created on ${existing.paymentGateway}: ${ONE_PAYMENT}`,
      { field: 'receiptId', paymentGateway: existing.paymentGateway, paymentId: existing.paymentId ?? null },
    );
  }
  throw new ConflictError('This transactionId is already mapped to another of your receipts', {
    field: 'transactionId',
  });
}

/**
 * Encrypts and stores the receipt, creates the payment with pointers to it, and maps the transaction.
 * Every step is safe to repeat: the envelope is stored once per (merchant client, receiptId), the
 * gateway call carries an idempotency key derived from the same pair, and the mapping is written once
 * per (merchant client, transactionId) — so a retry after any failure finds the same payment rather than making another.
 */
export async function createPaymentWithReceipt(
  deps: PaymentDeps,
  input: {
    kind: GatewayKind;
    body: CreatePaymentBody;
    caller: Caller;
    requestId: string;
    /** The hash of the request's idempotency key: the same request may carry on after a crash. */
    reservationKey: string;
    /** The Receipt-Signature header, when the request carries one. */
    signature?: string | undefined;
  },
): Promise<PaymentResult> {
  const { kind, body, caller } = input;
  const amount = chargedAmount(kind, body);
  const gateway = await configuredGateway(deps, kind);
  const { amount: _amount, cardNonce, paymentMethodId, receiptCredential, ...receiptFields } = body;
  // The signature is checked before anything is stored or charged; what it signed is what is sealed.
  const signing = await signingOf(deps, caller, input.signature, input.requestId);
  const signed = await sealedWithSignature(deps, signing, {
    caller,
    receipt: receiptOfFlattened(receiptFields, signing !== null, deps.clock.now()),
    requestId: input.requestId,
  });
  // The receipt credential is checked over the same receipt, before anything is stored or charged.
  const receipt = await sealedWithCredential(deps, receiptCredential, {
    caller,
    receipt: signed,
    requestId: input.requestId,
  });
  const { envelope, paymentStatus: storedStatus } = await encryptAndStore(deps, {
    receipt,
    ...(body.recipientHashedPan ? { recipientHashedPan: body.recipientHashedPan } : {}),
    caller,
    requestId: input.requestId,
    requestDigest: digestOf({ ...receiptFields, receiptCredential, recipientHashedPan: undefined }),
    paymentStatus: 'pending',
  });
  const pointers = {
    receiptId: receipt.receiptId,
    transactionId: receipt.transaction.transactionId,
    merchantId: receipt.merchant.merchantId,
  };
  // Everything that can refuse the request has run by now (amounts, the merchantId's owner, the
  // receipt) except the mapping: reserve it before charging, so a refusal never leaves a payment behind.
  await reserveMapping(deps, {
    kind,
    envelope,
    caller,
    reservedBy: input.reservationKey,
    requestId: input.requestId,
  });
  const created = await gateway
    .createPayment({
      idempotencyKey: createHash('sha256').update(`${caller.clientId}:${receipt.receiptId}`).digest('hex'),
      amount,
      currency: body.currency,
      pointers,
      lines: receipt.items.map((item) => ({
        name: item.name,
        quantity: item.quantity,
        unitPrice: item.unitPrice,
        totalPrice: item.totalPrice,
      })),
      taxAmount: body.taxAmount,
      ...(body.allowances !== undefined || body.charges !== undefined
        ? {
            adjustments: {
              allowances: (body.allowances ?? []).map(({ reason, amount }) => ({ reason, amount })),
              charges: (body.charges ?? []).map(({ reason, amount }) => ({ reason, amount })),
            },
          }
        : {}),
      ...(cardNonce ? { cardNonce } : {}),
      ...(paymentMethodId ? { paymentMethod: paymentMethodId } : {}),
    })
    .catch(async (error: unknown) => {
      deps.telemetry.count('PaymentFailures', { gateway: kind, outcome: paymentFailure(error) });
      // The card was declined: the receipt stored for it says so (a retry that succeeds moves it on).
      if (error instanceof PaymentDeclinedError) {
        await deps.repos.receipts.setPaymentStatus(
          { merchantClientId: caller.clientId, receiptId: receipt.receiptId },
          'pending',
          'failed',
        );
      }
      throw error;
    });
  const mappingKey = { merchantClientId: caller.clientId, transactionId: pointers.transactionId };
  await deps.repos.transactions.complete(mappingKey, pointers.receiptId, created.paymentId, {
    paymentId: created.paymentId,
    orderId: created.orderId,
    status: created.status,
    amount: created.amount,
    currency: created.currency,
  });
  // Charged: the network's references go into the receipt the cardholder gets (absent when none yet).
  if (created.references) {
    await sealCardTransaction(deps, {
      receipt,
      gateway: kind,
      references: created.references,
      caller,
      requestId: input.requestId,
      recipientHashedPan: body.recipientHashedPan,
    });
  }
  await recordCreatedPayment(deps, { kind, created, receipt, caller, storedStatus });
  await deps.audit.record({
    action: 'payment.create',
    outcome: 'success',
    requestId: input.requestId,
    clientId: caller.clientId,
    receiptId: pointers.receiptId,
    transactionId: pointers.transactionId,
  });
  return {
    paymentId: created.paymentId,
    clientSecret: created.clientSecret,
    orderId: created.orderId,
    gateway: kind,
    receiptMetadata: { ...pointers, isEscrowed: envelope.isEscrowed },
    livemode: created.livemode,
  };
}
