import { createHash } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { base32 } from './base32.js';

/** The event names, as lib/db/webhooks.ts lists them (kept literal here so this module stands alone). */
export type DeliveredEventType = 'receipt.available' | 'receipt.escrowed' | 'receipt.updated';

/** A receipt's paymentStatus values (lib/kernel/payment-status.ts), as the stream's images carry them. */
type StatusText = string;

/**
 * One change of the receipts table as both readers give it: the Lambda event source mapping and the
 * local poller (DynamoDB Streams GetRecords). Images are in DynamoDB's attribute-value form.
 */
export interface ReceiptStreamRecord {
  eventName?: string;
  dynamodb?: {
    NewImage?: Record<string, unknown>;
    OldImage?: Record<string, unknown>;
    SequenceNumber?: string;
  };
}

/** Ids only: never the envelope's content, a hashedPan, a card tag or claim facts. */
export interface AvailableData {
  receiptId: string;
  merchantId: string;
  transactionId: string;
  userId: string;
  keyId: string;
  createdAt: string;
}
export type EscrowedData = Omit<AvailableData, 'userId' | 'keyId'>;
/** A receipt's paymentStatus changed, or a refund receipt was added to a sale. Ids and statuses only. */
export interface UpdatedData {
  receiptId: string;
  merchantId: string;
  transactionId: string;
  paymentStatus: StatusText;
  previousPaymentStatus: StatusText | null;
  /** A sale: the refund receipt of the refund this update is about. */
  refundReceiptId?: string;
  /** A refund receipt: the sale it refunds. */
  relatedReceiptId?: string;
}

export type ReceiptEvent =
  | {
      type: 'receipt.available';
      /** The issuer client owning this user receives it. */
      userId: string;
      merchantClientId: string;
      data: AvailableData;
    }
  | {
      type: 'receipt.escrowed';
      /** The merchant client that created the receipt receives it. */
      merchantClientId: string;
      data: EscrowedData;
    }
  | {
      type: 'receipt.updated';
      /** Raised twice: for the issuer owning `userId` (when the receipt has a user) and for the merchant. */
      audience: 'issuer' | 'merchant';
      userId?: string;
      merchantClientId: string;
      data: UpdatedData;
    };

/** The parts of a stored receipt an event is made of; everything else in the image is ignored. */
interface ReceiptImage {
  merchantClientId: string;
  receiptId: string;
  recipientUserId?: string;
  createdAt: string;
  merchantId: string;
  transactionId: string;
  keyId: string;
  escrowed: boolean;
  paymentStatus?: string;
  relatedReceiptId?: string;
  refundReceiptIds: string[];
  lastRefundReceiptId?: string;
}

const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

function readImage(image: Record<string, unknown> | undefined): ReceiptImage | null {
  if (!image) return null;
  // The Lambda event's attribute values and the SDK's are the same JSON shapes.
  const item = unmarshall(image as Record<string, AttributeValue>);
  const envelope = (
    typeof item.envelope === 'object' && item.envelope !== null ? item.envelope : {}
  ) as Record<string, unknown>;
  const merchantClientId = text(item.merchantClientId);
  const receiptId = text(item.receiptId);
  const merchantId = text(envelope.merchantId);
  const transactionId = text(envelope.transactionId);
  if (!merchantClientId || !receiptId || !merchantId || !transactionId) return null;
  const bundle = envelope.keyBundle as Record<string, unknown> | undefined;
  const recipientUserId = text(item.recipientUserId);
  const paymentStatus = text(item.paymentStatus);
  const relatedReceiptId = text(item.relatedReceiptId);
  const lastRefundReceiptId = text(item.lastRefundReceiptId);
  return {
    ...(paymentStatus ? { paymentStatus } : {}),
    ...(relatedReceiptId ? { relatedReceiptId } : {}),
    ...(lastRefundReceiptId ? { lastRefundReceiptId } : {}),
    refundReceiptIds: Array.isArray(item.refundReceiptIds)
      ? item.refundReceiptIds.filter((id): id is string => typeof id === 'string')
      : [],
    merchantClientId,
    receiptId,
    ...(recipientUserId ? { recipientUserId } : {}),
    createdAt: text(item.createdAt) ?? text(envelope.createdAt) ?? '',
    merchantId,
    transactionId,
    keyId: text(envelope.keyId) ?? text(bundle?.keyId) ?? '',
    escrowed: envelope.isEscrowed === true,
  };
}

function available(image: ReceiptImage, userId: string): ReceiptEvent {
  return {
    type: 'receipt.available',
    userId,
    merchantClientId: image.merchantClientId,
    data: {
      receiptId: image.receiptId,
      merchantId: image.merchantId,
      transactionId: image.transactionId,
      userId,
      keyId: image.keyId,
      createdAt: image.createdAt,
    },
  };
}

/**
 * receipt.updated, when a receipt's paymentStatus changed or a sale gained a refund receipt: to the
 * issuer of its user (if it has one) and to its merchant. The refund it is about is named when a
 * refund receipt was added or the sale became (partially) refunded.
 */
function updated(next: ReceiptImage, previous: ReceiptImage | null): ReceiptEvent[] {
  if (!next.paymentStatus) return [];
  const statusChanged = next.paymentStatus !== previous?.paymentStatus;
  const refundAdded = next.refundReceiptIds.length > (previous?.refundReceiptIds.length ?? 0);
  if (!statusChanged && !refundAdded) return [];
  const aboutRefund =
    refundAdded || next.paymentStatus === 'partially_refunded' || next.paymentStatus === 'refunded';
  const data: UpdatedData = {
    receiptId: next.receiptId,
    merchantId: next.merchantId,
    transactionId: next.transactionId,
    paymentStatus: next.paymentStatus,
    previousPaymentStatus: previous?.paymentStatus ?? null,
    ...(aboutRefund && next.lastRefundReceiptId ? { refundReceiptId: next.lastRefundReceiptId } : {}),
    ...(next.relatedReceiptId ? { relatedReceiptId: next.relatedReceiptId } : {}),
  };
  const base = { type: 'receipt.updated' as const, merchantClientId: next.merchantClientId, data };
  return [
    ...(next.recipientUserId ? [{ ...base, audience: 'issuer' as const, userId: next.recipientUserId }] : []),
    { ...base, audience: 'merchant' as const },
  ];
}

/**
 * The events one change raises: a receipt stored for a registered user, or claimed by one (its
 * recipient appears), is available to that user's issuer; a receipt stored in escrow is news to its
 * merchant; a change of its paymentStatus (or a refund receipt added to a sale) is an update to both.
 * Removals (TTL, erasure) and other updates raise nothing.
 */
export function eventsOf(record: ReceiptStreamRecord): ReceiptEvent[] {
  const next = readImage(record.dynamodb?.NewImage);
  if (!next) return [];
  if (record.eventName === 'INSERT') {
    // A receipt copied into the sharded table (lib/receipts/migrate-sharded.ts) raised its events when first stored.
    if (record.dynamodb?.NewImage?.migratedFrom !== undefined) return [];
    const events: ReceiptEvent[] = [];
    if (next.recipientUserId) events.push(available(next, next.recipientUserId));
    if (next.escrowed && !next.recipientUserId) {
      const { receiptId, merchantId, transactionId, createdAt } = next;
      events.push({
        type: 'receipt.escrowed',
        merchantClientId: next.merchantClientId,
        data: { receiptId, merchantId, transactionId, createdAt },
      });
    }
    return events;
  }
  if (record.eventName === 'MODIFY') {
    const previous = readImage(record.dynamodb?.OldImage);
    const events: ReceiptEvent[] = [];
    if (next.recipientUserId && next.recipientUserId !== previous?.recipientUserId)
      events.push(available(next, next.recipientUserId));
    events.push(...updated(next, previous));
    return events;
  }
  return [];
}

/**
 * The delivery's id and the `webhook-id` header: the same webhook, event and receipt always give the
 * same id, so a stream record read twice (a Lambda retry, a poller restart) creates nothing new and a
 * receiver can drop a repeat by it.
 */
export function deliveryIdOf(webhookId: string, event: ReceiptEvent): string {
  // An update is one per status and refund, whichever of its audiences a webhook hears it as.
  const which =
    event.type === 'receipt.available'
      ? [event.userId]
      : event.type === 'receipt.updated'
        ? [event.data.paymentStatus, event.data.refundReceiptId ?? '']
        : [''];
  const digest = createHash('sha256')
    .update([webhookId, event.type, event.merchantClientId, event.data.receiptId, ...which].join('|'))
    .digest();
  return `msg_${base32(digest).slice(0, 26)}`;
}

/** The body a receiver gets (Standard Webhooks: type, timestamp, data). */
export const payloadOf = (event: ReceiptEvent, timestamp: Date): string =>
  JSON.stringify({ type: event.type, timestamp: timestamp.toISOString(), data: event.data });
