import { createHmac, hkdfSync } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { CardTagKeyring, newCardTagKey } from '../../../lib/crypto/card-tag.js';
import {
  authorizationEvidenceId,
  bucketOf,
  evidenceId,
  evidenceIdsOf,
  lookupIdsOf,
  networkEvidenceId,
  openEvidence,
  sealEvidence,
} from '../../../lib/crypto/evidence.js';
import { evidenceEntriesFor, evidenceMatches, lookupIdsFor } from '../../../lib/receipts/evidence.js';

const WIDTH = 15 * 60_000;
const pan = 'b'.repeat(64);
const at = '2026-11-21T09:15:00.000Z';

describe('the keyed evidence index', () => {
  const k1 = newCardTagKey();
  const keyring = new CardTagKeyring([{ version: 1, key: k1 }]);
  const tag = keyring.tagOf(pan);
  const receiptRef = 'client-1#3f0e8c0a-1f6b-4f7e-9d53-9d1c2a1b4c5d';

  it('is HMAC-SHA256, under a key derived (HKDF) from the card-tag key, of tag, amount, currency, width and bucket', () => {
    const bucket = bucketOf(at, WIDTH);
    const key = Buffer.from(hkdfSync('sha256', k1, Buffer.alloc(0), 'receipt-evidence-index', 32));
    const expected = createHmac('sha256', key)
      .update([tag, 1748, 'USD', WIDTH, bucket].join('\n'))
      .digest('base64url');
    expect(evidenceId(keyring, tag, { amount: 1748, currency: 'USD' }, bucket, WIDTH)).toBe(`v1.${expected}`);
    // Nothing of the card, the amount or the time in it, and another key gives another id.
    const id = evidenceId(keyring, tag, { amount: 1748, currency: 'USD' }, bucket, WIDTH);
    for (const part of [tag.slice(3), '1748', 'USD', String(bucket)]) expect(id).not.toContain(part);
    const other = new CardTagKeyring([{ version: 1, key: newCardTagKey() }]);
    expect(evidenceId(other, other.tagOf(pan), { amount: 1748, currency: 'USD' }, bucket, WIDTH)).not.toBe(
      id,
    );
  });

  it('writes a receipt under its own bucket once, and a look-up of three buckets finds it anywhere within ± the window', () => {
    const written = evidenceIdsOf(keyring, { tag, amount: 1748, currency: 'USD', at }, WIDTH);
    expect(written).toHaveLength(1);
    for (const offset of [-WIDTH, -WIDTH / 2, -1, 0, 1, WIDTH / 3, WIDTH]) {
      const claimed = new Date(Date.parse(at) + offset).toISOString();
      const read = lookupIdsOf(keyring, tag, { amount: 1748, currency: 'USD', at: claimed }, WIDTH);
      expect(read).toHaveLength(3);
      expect(read).toContain(written[0]);
    }
    // Beyond twice the window the receipt's bucket is not read at all.
    const far = new Date(Date.parse(at) + 2 * WIDTH + 1).toISOString();
    expect(lookupIdsOf(keyring, tag, { amount: 1748, currency: 'USD', at: far }, WIDTH)).not.toContain(
      written[0],
    );
    // Another amount, currency or card reads another partition.
    for (const [other, query] of [
      [tag, { amount: 1749, currency: 'USD', at }],
      [tag, { amount: 1748, currency: 'EUR', at }],
      [keyring.tagOf('c'.repeat(64)), { amount: 1748, currency: 'USD', at }],
    ] as const)
      for (const id of lookupIdsOf(keyring, other, query, WIDTH)) expect(written).not.toContain(id);
  });

  it('seals an entry for its id and receipt only: another id, receipt, key or a changed byte opens nothing', () => {
    const [id] = evidenceIdsOf(keyring, { tag, amount: 1748, currency: 'USD', at }, WIDTH);
    const [neighbour] = lookupIdsOf(keyring, tag, { amount: 1748, currency: 'USD', at }, WIDTH);
    const body = { tag, amount: 1748, currency: 'USD', at, cardLast4: '4242' };
    const sealed = sealEvidence(keyring, id!, receiptRef, body);
    expect(openEvidence(keyring, id!, receiptRef, sealed)).toEqual(body);
    expect(sealed).not.toContain('1748');
    expect(openEvidence(keyring, neighbour!, receiptRef, sealed)).toBeUndefined();
    expect(
      openEvidence(keyring, id!, 'client-2#3f0e8c0a-1f6b-4f7e-9d53-9d1c2a1b4c5d', sealed),
    ).toBeUndefined();
    const other = new CardTagKeyring([{ version: 1, key: newCardTagKey() }]);
    expect(openEvidence(other, id!, receiptRef, sealed)).toBeUndefined();
    const bytes = Buffer.from(sealed.split('.')[1]!, 'base64url');
    bytes[0]! ^= 1;
    const [iv, , authTag] = sealed.split('.');
    expect(
      openEvidence(keyring, id!, receiptRef, `${iv}.${bytes.toString('base64url')}.${authTag}`),
    ).toBeUndefined();
  });

  it('keys a newer card-tag version with that version: its ids differ, and the old ones stay readable', () => {
    const v2 = new CardTagKeyring([
      { version: 1, key: k1 },
      { version: 2, key: newCardTagKey() },
    ]);
    const oldIds = evidenceIdsOf(v2, { tag, amount: 1748, currency: 'USD', at }, WIDTH);
    const newIds = evidenceIdsOf(v2, { tag: v2.advance(tag), amount: 1748, currency: 'USD', at }, WIDTH);
    expect(oldIds.every((id) => id.startsWith('v1.'))).toBe(true);
    expect(newIds.every((id) => id.startsWith('v2.'))).toBe(true);
    expect(oldIds).toEqual(evidenceIdsOf(keyring, { tag, amount: 1748, currency: 'USD', at }, WIDTH));
  });

  describe("the card network's references (issue 38)", () => {
    const facts = {
      amounts: [1748, 1548],
      currency: 'USD',
      at,
      cardLast4: '4242',
      authorizationCode: 'A1B2C3',
      networkTransactionId: '581012345678901',
    };
    const receipt = { merchantClientId: 'client-1', receiptId: '3f0e8c0a-1f6b-4f7e-9d53-9d1c2a1b4c5d' };
    const entries = evidenceEntriesFor(keyring, { tag, facts, receipt, ttl: 1, widthMs: WIDTH });
    const opened = (id: string) =>
      entries
        .filter((entry) => entry.evidenceId === id)
        .map((entry) => openEvidence(keyring, id, entry.receiptRef, entry.sealed));

    it('keys an entry per amount by (card, code, amount, currency) and one by (card, network transaction id), beside the time entries', () => {
      const key = Buffer.from(hkdfSync('sha256', k1, Buffer.alloc(0), 'receipt-evidence-index', 32));
      const mac = (parts: (string | number)[]) =>
        `v1.${createHmac('sha256', key).update(parts.join('\n')).digest('base64url')}`;
      const byCode = authorizationEvidenceId(keyring, tag, {
        authorizationCode: 'A1B2C3',
        amount: 1548,
        currency: 'USD',
      });
      expect(byCode).toBe(mac(['authorization', tag, 'A1B2C3', 1548, 'USD']));
      expect(networkEvidenceId(keyring, tag, '581012345678901')).toBe(
        mac(['network', tag, '581012345678901']),
      );
      // 2 amounts in their one bucket, 2 amounts by code, 1 by network id.
      expect(entries).toHaveLength(5);
      expect(entries.map((entry) => entry.evidenceId)).toContain(byCode);
      // Neither code is in an entry in clear: only in its sealed body.
      expect(JSON.stringify(entries)).not.toMatch(/A1B2C3|581012345678901/);
    });

    it('finds by the code alone (with amount and currency) or the network id alone, and a wrong one finds nothing', () => {
      const byCode = { authorizationCode: 'A1B2C3', amount: 1548, currency: 'USD' };
      const byNetwork = { networkTransactionId: '581012345678901' };
      for (const transaction of [byCode, byNetwork, { ...byNetwork, amount: 1748, cardLast4: '4242' }]) {
        const [id, ...more] = lookupIdsFor(keyring, tag, transaction, WIDTH);
        expect(more).toEqual([]);
        expect(opened(id!).map((body) => evidenceMatches(body, tag, transaction, WIDTH))).toEqual([true]);
      }
      for (const wrong of [
        { ...byCode, authorizationCode: 'A1B2C4' },
        { ...byCode, amount: 1549 },
        { networkTransactionId: '581012345678902' },
      ])
        expect(lookupIdsFor(keyring, tag, wrong, WIDTH).flatMap(opened)).toEqual([]);
      // Every field given must match, even beside the reference that found the entry.
      const [id] = lookupIdsFor(keyring, tag, byNetwork, WIDTH);
      for (const mismatch of [
        { ...byNetwork, amount: 1 },
        { ...byNetwork, authorizationCode: 'ZZZZZZ' },
        { ...byNetwork, transactionDate: '2026-11-22T09:15:00.000Z' },
        { ...byNetwork, cardLast4: '0000' },
      ])
        expect(opened(id!).map((body) => evidenceMatches(body, tag, mismatch, WIDTH))).toEqual([false]);
      // A time look-up never matches a reference entry, nor a reference look-up a time entry.
      const timeIds = lookupIdsFor(
        keyring,
        tag,
        { amount: 1548, currency: 'USD', transactionDate: at },
        WIDTH,
      );
      expect(timeIds.flatMap(opened).map((body) => evidenceMatches(body, tag, byCode, WIDTH))).toEqual([
        false,
      ]);
    });

    it('re-keys a reference entry from its opened body alone (card-key rotate)', () => {
      for (const entry of entries) {
        const body = openEvidence(keyring, entry.evidenceId, entry.receiptRef, entry.sealed)!;
        expect(evidenceIdsOf(keyring, body, WIDTH)).toContain(entry.evidenceId);
      }
    });
  });
});
