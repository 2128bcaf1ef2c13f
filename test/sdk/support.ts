import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { BoundFields } from '../../lib/crypto/envelope.js';
import { parsePrivateKey, parsePublicKey } from '../../lib/crypto/keys.js';
import { importPrivateKey } from '@receipt-service/sdk';
import type { WebCryptoKey } from '@receipt-service/receipt-core';

/** One recipient key in every form the three openers take: node KeyObject, WebCrypto key, PKCS#8. */
export interface RecipientKeys {
  keyId: string;
  publicKey: KeyObject;
  privateKey: KeyObject;
  pkcs8: string;
  webCryptoKey: WebCryptoKey;
}

export async function recipientKeys(type: 'rsa' | 'p256', keyId = `key-${type}`): Promise<RecipientKeys> {
  const pair =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const pkcs8 = pair.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
  const spki = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
  return {
    keyId,
    // Through the service's own parsers, so the keys are inside its allow-list exactly as in production.
    publicKey: parsePublicKey(spki),
    privateKey: parsePrivateKey(pkcs8),
    pkcs8,
    webCryptoKey: (await importPrivateKey(pkcs8)).privateKey,
  };
}

export const bound: BoundFields = {
  version: '1.0',
  receiptId: '6f1c2f9e-3b0e-4c55-9d1a-2f7d4e0b9a11',
  merchantId: '0b8e2a44-8f31-4d3c-a2f4-6c1f1d7e5b22',
  transactionId: 'c3d9e8f7-1a2b-4c5d-8e9f-0a1b2c3d4e5f',
};

export const receiptJson = {
  receiptId: bound.receiptId,
  merchantName: 'Corner Coffee',
  items: [{ name: 'Flat white', quantity: 2, unitPrice: 450, totalPrice: 900 }],
  totalAmount: 978,
  note: 'ünïcödé ✓',
};
export const receiptBytes = (): Buffer => Buffer.from(JSON.stringify(receiptJson), 'utf8');
