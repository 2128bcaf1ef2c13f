import { describe, expect, it } from '@jest/globals';
import { marshall } from '@aws-sdk/util-dynamodb';
import { base32 } from '../../lib/webhooks/base32.js';
import { deliveryIdOf, eventsOf, payloadOf, type ReceiptStreamRecord } from '../../lib/webhooks/events.js';

const createdAt = '2026-01-02T03:04:05.000Z';

/** A stored receipt as the receipts table holds it, with the secrets an event must never carry. */
const receipt = (extra: Record<string, unknown> = {}, envelope: Record<string, unknown> = {}) => ({
  merchantClientId: 'client-merchant',
  receiptId: 'rcpt-1',
  requestDigest: 'digest-secret',
  createdAt,
  ttl: 1_900_000_000,
  envelope: {
    receiptId: 'rcpt-1',
    merchantId: 'merchant-1',
    transactionId: 'txn-1',
    keyId: 'key-1',
    keyBundle: { keyId: 'key-1', encryptedAesKey: 'wrapped-key', algorithm: 'RSA-OAEP-256' },
    ciphertext: 'CONTENT',
    iv: 'iv',
    tag: 'tag',
    isEscrowed: false,
    escrowKeyId: null,
    createdAt,
    ...envelope,
  },
  ...extra,
});

const record = (
  eventName: string,
  next: Record<string, unknown> | undefined,
  previous?: Record<string, unknown>,
): ReceiptStreamRecord => ({
  eventName,
  dynamodb: {
    ...(next ? { NewImage: marshall(next, { removeUndefinedValues: true }) } : {}),
    ...(previous ? { OldImage: marshall(previous, { removeUndefinedValues: true }) } : {}),
    SequenceNumber: '100',
  },
});

const escrowed = receipt(
  {
    pendingRecipient: 'cardtag-v1-secret',
    claimAt: createdAt,
    claimFacts: 'sealed-facts',
  },
  { isEscrowed: true, escrowKeyId: 'escrow-key', keyId: 'escrow-key' },
);

describe('events of a receipts stream record', () => {
  it('raises receipt.available for a receipt stored for a registered user, with ids only', () => {
    const [event, ...rest] = eventsOf(record('INSERT', receipt({ recipientUserId: 'user-1' })));
    expect(rest).toEqual([]);
    expect(event).toEqual({
      type: 'receipt.available',
      userId: 'user-1',
      merchantClientId: 'client-merchant',
      data: {
        receiptId: 'rcpt-1',
        merchantId: 'merchant-1',
        transactionId: 'txn-1',
        userId: 'user-1',
        keyId: 'key-1',
        createdAt,
      },
    });
  });

  it('raises receipt.escrowed to the merchant for an escrowed receipt, without its card tag or facts', () => {
    const events = eventsOf(record('INSERT', escrowed));
    expect(events).toEqual([
      {
        type: 'receipt.escrowed',
        merchantClientId: 'client-merchant',
        data: { receiptId: 'rcpt-1', merchantId: 'merchant-1', transactionId: 'txn-1', createdAt },
      },
    ]);
  });

  it('raises receipt.available when a claim gives an escrowed receipt its recipient', () => {
    const claimed = receipt({ recipientUserId: 'user-2' }, { keyId: 'key-2' });
    const events = eventsOf(record('MODIFY', claimed, escrowed));
    expect(events.map((event) => [event.type, event.data])).toEqual([
      [
        'receipt.available',
        {
          receiptId: 'rcpt-1',
          merchantId: 'merchant-1',
          transactionId: 'txn-1',
          userId: 'user-2',
          keyId: 'key-2',
          createdAt,
        },
      ],
    ]);
  });

  it('raises nothing for an update that keeps the recipient, a removal, or an unreadable image', () => {
    const stored = receipt({ recipientUserId: 'user-1' });
    expect(eventsOf(record('MODIFY', { ...stored, ttl: 1 }, stored))).toEqual([]);
    expect(eventsOf(record('REMOVE', undefined, stored))).toEqual([]);
    expect(eventsOf(record('INSERT', { merchantClientId: 'client-merchant', receiptId: 'x' }))).toEqual([]);
    expect(eventsOf({})).toEqual([]);
  });

  it('puts nothing of the envelope, hashedPan, card tag or claim facts into a payload', () => {
    const events = [
      ...eventsOf(record('INSERT', receipt({ recipientUserId: 'user-1', hashedPan: 'pan-secret' }))),
      ...eventsOf(record('INSERT', escrowed)),
    ];
    expect(events).toHaveLength(2);
    for (const event of events) {
      const body = payloadOf(event, new Date(createdAt));
      const parsed = JSON.parse(body) as { type: string; timestamp: string; data: Record<string, unknown> };
      expect(Object.keys(parsed).sort()).toEqual(['data', 'timestamp', 'type']);
      expect(
        Object.keys(parsed.data).every((key) =>
          /^(receiptId|merchantId|transactionId|userId|keyId|createdAt)$/.test(key),
        ),
      ).toBe(true);
      for (const secret of [
        'CONTENT',
        'wrapped-key',
        'cardtag-v1-secret',
        'sealed-facts',
        'pan-secret',
        'digest-secret',
      ])
        expect(body).not.toContain(secret);
    }
  });
});

describe('receipt.updated', () => {
  const sale = (extra: Record<string, unknown> = {}) =>
    receipt({ recipientUserId: 'user-1', paymentStatus: 'pending', ...extra });

  it('raises one for the issuer of its user and one for its merchant when the paymentStatus changes', () => {
    const events = eventsOf(record('MODIFY', sale({ paymentStatus: 'succeeded' }), sale()));
    const data = {
      receiptId: 'rcpt-1',
      merchantId: 'merchant-1',
      transactionId: 'txn-1',
      paymentStatus: 'succeeded',
      previousPaymentStatus: 'pending',
    };
    expect(events).toEqual([
      {
        type: 'receipt.updated',
        audience: 'issuer',
        userId: 'user-1',
        merchantClientId: 'client-merchant',
        data,
      },
      { type: 'receipt.updated', audience: 'merchant', merchantClientId: 'client-merchant', data },
    ]);
    // Both audiences hear the same update: a client that is both gets one delivery per webhook.
    expect(deliveryIdOf('wh_1', events[0]!)).toBe(deliveryIdOf('wh_1', events[1]!));
  });

  it('names the refund receipt when a refund is added, even when the status stays', () => {
    const before = sale({ paymentStatus: 'succeeded' });
    const [issuerEvent] = eventsOf(
      record(
        'MODIFY',
        sale({ paymentStatus: 'succeeded', refundReceiptIds: ['refund-1'], lastRefundReceiptId: 'refund-1' }),
        before,
      ),
    );
    expect(issuerEvent?.data).toMatchObject({ paymentStatus: 'succeeded', refundReceiptId: 'refund-1' });
    const [settled] = eventsOf(
      record(
        'MODIFY',
        sale({ paymentStatus: 'refunded', refundReceiptIds: ['refund-1'], lastRefundReceiptId: 'refund-1' }),
        sale({ paymentStatus: 'succeeded', refundReceiptIds: ['refund-1'], lastRefundReceiptId: 'refund-1' }),
      ),
    );
    expect(settled?.data).toMatchObject({
      paymentStatus: 'refunded',
      previousPaymentStatus: 'succeeded',
      refundReceiptId: 'refund-1',
    });
    // Each change is its own delivery; the same stream record read again is the same one.
    expect(deliveryIdOf('wh_1', issuerEvent!)).not.toBe(deliveryIdOf('wh_1', settled!));
  });

  it('goes to the merchant only for an escrowed sale, and names the sale of a refund receipt', () => {
    const events = eventsOf(
      record(
        'MODIFY',
        receipt({ paymentStatus: 'succeeded', relatedReceiptId: 'sale-1' }, { isEscrowed: true }),
        receipt({ paymentStatus: 'pending', relatedReceiptId: 'sale-1' }, { isEscrowed: true }),
      ),
    );
    expect(events.map((event) => [event.type, 'audience' in event ? event.audience : null])).toEqual([
      ['receipt.updated', 'merchant'],
    ]);
    expect(events[0]?.data).toMatchObject({ relatedReceiptId: 'sale-1' });
  });

  it('raises nothing for a receipt without a status, or a write that changes neither status nor refunds', () => {
    expect(eventsOf(record('MODIFY', receipt({ recipientUserId: 'user-1' }), receipt({})))).toHaveLength(1);
    expect(
      eventsOf(record('MODIFY', sale({ paymentStatus: 'succeeded' }), sale({ paymentStatus: 'succeeded' }))),
    ).toEqual([]);
    expect(eventsOf(record('INSERT', sale()))).toEqual([
      expect.objectContaining({ type: 'receipt.available' }),
    ]);
  });
});

describe('delivery ids', () => {
  const [available] = eventsOf(record('INSERT', receipt({ recipientUserId: 'user-1' })));
  const [escrowEvent] = eventsOf(record('INSERT', escrowed));

  it('are the same for the same webhook and event, in the Standard Webhooks msg_ form', () => {
    const id = deliveryIdOf('wh_1', available!);
    expect(id).toMatch(/^msg_[a-z2-7]{26}$/);
    expect(deliveryIdOf('wh_1', available!)).toBe(id);
  });

  it('differ between webhooks, events, users and merchant namespaces', () => {
    const ids = new Set([
      deliveryIdOf('wh_1', available!),
      deliveryIdOf('wh_2', available!),
      deliveryIdOf('wh_1', escrowEvent!),
      deliveryIdOf('wh_1', { ...available!, userId: 'user-9' } as typeof available & object),
      deliveryIdOf('wh_1', { ...available!, merchantClientId: 'client-other' }),
    ]);
    expect(ids.size).toBe(5);
  });
});

describe('base32', () => {
  it('is RFC 4648 base32, lower case and unpadded', () => {
    const vectors: [string, string][] = [
      ['', ''],
      ['f', 'my'],
      ['fo', 'mzxq'],
      ['foo', 'mzxw6'],
      ['foob', 'mzxw6yq'],
      ['fooba', 'mzxw6ytb'],
      ['foobar', 'mzxw6ytboi'],
    ];
    for (const [input, encoded] of vectors) expect(base32(Buffer.from(input))).toBe(encoded);
  });

  it('stays exact over many bytes (no bits lost past 32)', () => {
    const bytes = Buffer.alloc(64, 0xff);
    expect(base32(bytes)).toBe(`${'7'.repeat(102)}y`);
  });
});
