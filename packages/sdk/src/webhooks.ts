/**
 * Webhook verification (Standard Webhooks: webhook-id, webhook-timestamp and webhook-signature
 * headers, HMAC-SHA256 under a whsec_ secret). The standardwebhooks package is pure JavaScript
 * (@stablelib/base64, fast-sha256), so this runs in browsers and React Native as well as in Node.
 */
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

export { WebhookVerificationError };

export type WebhookEventType = 'receipt.available' | 'receipt.escrowed' | 'receipt.updated';

/** A receipt's paymentStatus: the state of the money it records. */
export type PaymentStatus =
  'pending' | 'succeeded' | 'failed' | 'canceled' | 'partially_refunded' | 'refunded';

/** What the service delivers: identifiers and statuses only, never receipt content. Fetch the envelope by receiptId. */
export interface WebhookEvent {
  type: WebhookEventType;
  timestamp: string;
  data: {
    receiptId: string;
    merchantId: string;
    transactionId: string;
    /** receipt.available and receipt.escrowed. */
    createdAt?: string;
    /** receipt.available only. */
    userId?: string;
    /** receipt.available only: the key the envelope is wrapped for. */
    keyId?: string;
    /** receipt.updated only: the receipt's status now, and before. */
    paymentStatus?: PaymentStatus;
    previousPaymentStatus?: PaymentStatus | null;
    /** receipt.updated of a sale, when it is about a refund: the refund receipt. */
    refundReceiptId?: string;
    /** receipt.updated of a refund receipt: the sale it refunds. */
    relatedReceiptId?: string;
  };
}

/** A fetch Headers object or a plain header map (any case, as Node's and frameworks' requests give them). */
export type WebhookHeaders = Headers | Record<string, string | readonly string[] | undefined>;

function headerMap(headers: WebhookHeaders): Record<string, string> {
  const map: Record<string, string> = {};
  const entries: Iterable<[string, unknown]> =
    typeof Headers !== 'undefined' && headers instanceof Headers
      ? headers.entries()
      : Object.entries(headers as Record<string, unknown>);
  for (const [name, value] of entries) {
    if (typeof value === 'string') map[name.toLowerCase()] = value;
    else if (Array.isArray(value)) map[name.toLowerCase()] = value.join(' ');
  }
  return map;
}

/**
 * Verifies a delivery and returns its event. `payload` must be the raw request body, byte for byte
 * (not re-serialised JSON). Pass both secrets while a rotation overlaps: the service signs with the
 * new and the previous secret for 24 hours. Throws WebhookVerificationError when no secret verifies
 * the signature, or when the timestamp is more than 5 minutes from now (a replay).
 */
export function verifyWebhook<T = WebhookEvent>(
  payload: string | Uint8Array,
  headers: WebhookHeaders,
  secrets: string | readonly string[],
): T {
  const list = typeof secrets === 'string' ? [secrets] : [...secrets];
  if (list.length === 0) throw new TypeError('verifyWebhook needs at least one secret');
  const body =
    typeof payload === 'string' ? payload : new TextDecoder('utf-8', { fatal: true }).decode(payload);
  const map = headerMap(headers);
  let failure: unknown;
  for (const secret of list) {
    try {
      return new Webhook(secret).verify(body, map) as T;
    } catch (error) {
      // A timestamp or header failure is the same for every secret; a signature mismatch may not be.
      failure = error;
      if (!(error instanceof WebhookVerificationError) || error.message !== 'No matching signature found')
        break;
    }
  }
  throw failure instanceof Error ? failure : new WebhookVerificationError('No matching signature found');
}
