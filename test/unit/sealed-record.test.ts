import { describe, expect, it } from '@jest/globals';
import { CardTagKeyring, newCardTagKey } from '../../lib/crypto/card-tag.js';
import { openRecord, sealRecord } from '../../lib/crypto/sealed-record.js';

/** What the service keeps sealed for itself (a payment's refund basis): lib/crypto/sealed-record.ts. */
describe('sealed records', () => {
  const keyring = new CardTagKeyring([{ version: 1, key: newCardTagKey() }]);
  const value = { lines: [{ name: 'Flat white', totalPrice: 900 }], merchant: 'Corner Coffee' };

  it('opens only for its purpose and its record, and not after a changed byte', () => {
    const sealed = sealRecord(keyring, 'refund-basis', 'client#receipt-1', value);
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('Flat white');
    expect(openRecord(keyring, 'refund-basis', 'client#receipt-1', sealed)).toEqual(value);
    expect(openRecord(keyring, 'refund-basis', 'client#receipt-2', sealed)).toBeUndefined();
    expect(openRecord(keyring, 'another-purpose', 'client#receipt-1', sealed)).toBeUndefined();
    const parts = sealed.split('.');
    const body = Buffer.from(parts[2]!, 'base64url');
    body[0] = body[0]! ^ 1;
    parts[2] = body.toString('base64url');
    expect(openRecord(keyring, 'refund-basis', 'client#receipt-1', parts.join('.'))).toBeUndefined();
    const shortTag = [...sealed.split('.').slice(0, 3), Buffer.alloc(4).toString('base64url')].join('.');
    expect(openRecord(keyring, 'refund-basis', 'client#receipt-1', shortTag)).toBeUndefined();
    expect(
      openRecord(
        new CardTagKeyring([{ version: 1, key: newCardTagKey() }]),
        'refund-basis',
        'client#receipt-1',
        sealed,
      ),
    ).toBeUndefined();
  });

  it('keeps opening what an older key version sealed after a rotation', () => {
    const sealed = sealRecord(keyring, 'refund-basis', 'client#receipt-1', value);
    const rotated = new CardTagKeyring([
      { version: 1, key: (keyring as unknown as { keys: Map<number, Buffer> }).keys.get(1)! },
      { version: 2, key: newCardTagKey() },
    ]);
    expect(openRecord(rotated, 'refund-basis', 'client#receipt-1', sealed)).toEqual(value);
    expect(sealRecord(rotated, 'refund-basis', 'client#receipt-1', value)).toMatch(/^v2\./);
  });
});
