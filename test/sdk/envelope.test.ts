import { beforeAll, describe, expect, it } from '@jest/globals';
import { flattenedDecrypt } from 'jose';
import {
  openEnvelope as serverOpenEnvelope,
  sealEnvelope,
  toFlattenedJwe,
  type SealedEnvelope,
} from '../../lib/crypto/envelope.js';
import { parsePublicKey } from '../../lib/crypto/keys.js';
import {
  EnvelopeError,
  exportPrivateKey,
  generateDeviceKey,
  importPrivateKey,
  openEnvelope,
  openEnvelopeBytes,
  type Envelope,
} from '@receipt-service/sdk';
import { sealLegacyEnvelope } from '../support/legacy-envelope.js';
import { tamperCases } from '../support/tamper-cases.js';
import { bound, receiptBytes, receiptJson, recipientKeys, type RecipientKeys } from './support.js';

/**
 * The SDK's openEnvelope against the server's sealEnvelope and openEnvelope and against jose: every
 * envelope layout opens in all three, and every change to an envelope gets the same verdict from the
 * SDK as from the server, with one error whatever the change was.
 */

type Kind = 'rsa' | 'p256' | 'legacy-rsa';
const kinds: Kind[] = ['rsa', 'p256', 'legacy-rsa'];

let keys: Record<'rsa' | 'p256' | 'otherRsa' | 'otherP256', RecipientKeys>;
let envelopes: Record<Kind, SealedEnvelope>;
const keysFor = (kind: Kind): RecipientKeys => (kind === 'p256' ? keys.p256 : keys.rsa);

beforeAll(async () => {
  keys = {
    rsa: await recipientKeys('rsa'),
    p256: await recipientKeys('p256'),
    otherRsa: await recipientKeys('rsa', 'other-rsa'),
    otherP256: await recipientKeys('p256', 'other-p256'),
  };
  envelopes = {
    rsa: sealEnvelope(receiptBytes(), bound, keys.rsa),
    p256: sealEnvelope(receiptBytes(), bound, keys.p256),
    'legacy-rsa': sealLegacyEnvelope(receiptBytes(), bound, keys.rsa.publicKey, keys.rsa.keyId),
  };
});

/** What the server decides: the plaintext, or refused. */
function serverVerdict(envelope: unknown, keys: RecipientKeys): string {
  try {
    return serverOpenEnvelope(envelope, keys.privateKey).toString('utf8');
  } catch {
    return 'refused';
  }
}

/** What the SDK decides; a refusal must be the one EnvelopeError, message and all. */
async function sdkVerdict(envelope: unknown, keys: RecipientKeys): Promise<string> {
  try {
    // Tampered envelopes are malformed on purpose: the SDK checks at run time what arrives over the wire.
    return new TextDecoder().decode(await openEnvelopeBytes(envelope as Envelope, keys.webCryptoKey));
  } catch (error) {
    expect(error).toBeInstanceOf(EnvelopeError);
    expect((error as Error).message).toBe(new EnvelopeError().message);
    return 'refused';
  }
}

describe('openEnvelope opens what the server seals, in every layout', () => {
  it.each(kinds)('%s: the SDK, the server and jose all read the same receipt', async (kind) => {
    const envelope = envelopes[kind];
    const recipient = keysFor(kind);
    expect(await openEnvelope(envelope, recipient.webCryptoKey)).toEqual(receiptJson);
    expect(serverVerdict(envelope, recipient)).toBe(JSON.stringify(receiptJson));
    const jose = await flattenedDecrypt(toFlattenedJwe(envelope), recipient.privateKey);
    expect(Buffer.from(jose.plaintext).equals(receiptBytes())).toBe(true);
  });

  it('the layouts are what the design says: alg per recipient (epk for P-256), or alg protected for legacy', () => {
    const header = (envelope: SealedEnvelope) =>
      JSON.parse(Buffer.from(envelope.protected, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(header(envelopes.rsa)).not.toHaveProperty('alg');
    expect(header(envelopes.p256)).not.toHaveProperty('alg');
    expect(header(envelopes['legacy-rsa']).alg).toBe('RSA-OAEP-256');
    expect(envelopes.p256.keyBundle).toMatchObject({
      algorithm: 'ECDH-ES+A256KW',
      epk: { kty: 'EC', crv: 'P-256' },
    });
    expect(Buffer.from(envelopes.p256.keyBundle.encryptedAesKey, 'base64')).toHaveLength(40);
    expect(envelopes.rsa.keyBundle).not.toHaveProperty('epk');
  });

  it('opens with an RSA key that may only unwrapKey, the other WebCrypto path', async () => {
    const privateKey = await crypto.subtle.importKey(
      'pkcs8',
      Buffer.from(keys.rsa.pkcs8, 'base64'),
      { name: 'RSA-OAEP', hash: 'SHA-256' },
      false,
      ['unwrapKey'],
    );
    expect(await openEnvelope(envelopes.rsa, privateKey)).toEqual(receiptJson);
  });

  it('opens a receipt of any size, the empty one included', async () => {
    for (const size of [0, 1, 15, 16, 17, 65_536]) {
      const plaintext = new Uint8Array(size).map((_, index) => index % 251);
      for (const recipient of [keys.rsa, keys.p256]) {
        const envelope = sealEnvelope(plaintext, bound, recipient);
        expect(Buffer.from(await openEnvelopeBytes(envelope, recipient.webCryptoKey)).equals(plaintext)).toBe(
          true,
        );
      }
    }
  });
});

describe('the SDK refuses exactly what the server refuses', () => {
  const cases = kinds.flatMap((kind) => tamperCases.map((tamper) => [kind, tamper.name, tamper] as const));

  it.each(cases)('%s: %s', async (kind, _name, tamper) => {
    const mutated = tamper.mutate(JSON.parse(JSON.stringify(envelopes[kind])) as Record<string, unknown>);
    const recipient = keysFor(kind);
    expect(await sdkVerdict(mutated, recipient)).toBe(serverVerdict(mutated, recipient));
  });

  it('the cases are tampering: every change but the three that touch nothing bound is refused', async () => {
    for (const kind of kinds) {
      const opened: string[] = [];
      for (const tamper of tamperCases) {
        const original = JSON.stringify(envelopes[kind]);
        const mutated = tamper.mutate(JSON.parse(original) as Record<string, unknown>);
        // A case that does not apply to this layout (removing an epk it does not have) changes nothing.
        if (JSON.stringify(mutated) === original) continue;
        if ((await sdkVerdict(mutated, keysFor(kind))) !== 'refused') opened.push(tamper.name);
      }
      expect({ kind, opened }).toEqual({
        kind,
        opened: [
          'envelope keyId changed (not bound)',
          'keyBundle keyId changed (not bound)',
          'unknown envelope member added',
        ],
      });
    }
  });
});

describe('keys: only the recipient key of the envelope algorithm opens it', () => {
  it.each([
    ['rsa', 'otherRsa'],
    ['rsa', 'p256'],
    ['legacy-rsa', 'p256'],
    ['p256', 'otherP256'],
    ['p256', 'rsa'],
  ] as const)('%s envelope, %s key: refused by the SDK as by the server', async (kind, keyName) => {
    expect(serverVerdict(envelopes[kind], keys[keyName])).toBe('refused');
    expect(await sdkVerdict(envelopes[kind], keys[keyName])).toBe('refused');
  });

  it('refuses a public key, a key for another algorithm, an undersized RSA key and a non-key', async () => {
    const rsaPublic = await crypto.subtle.importKey(
      'spki',
      keys.rsa.publicKey.export({ format: 'der', type: 'spki' }),
      { name: 'RSA-OAEP', hash: 'SHA-256' },
      true,
      ['encrypt'],
    );
    const rsaSha1 = await crypto.subtle.importKey(
      'pkcs8',
      Buffer.from(keys.rsa.pkcs8, 'base64'),
      { name: 'RSA-OAEP', hash: 'SHA-1' },
      false,
      ['decrypt'],
    );
    const ecdsa = await crypto.subtle.importKey(
      'pkcs8',
      Buffer.from(keys.p256.pkcs8, 'base64'),
      { name: 'ECDSA', namedCurve: 'P-256' },
      false,
      ['sign'],
    );
    const small = await crypto.subtle.generateKey(
      { name: 'RSA-OAEP', modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' },
      false,
      ['decrypt'],
    );
    const aes = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['decrypt']);
    const refusals: [string, unknown, SealedEnvelope][] = [
      ['RSA public key', rsaPublic, envelopes.rsa],
      ['RSA-OAEP with SHA-1', rsaSha1, envelopes.rsa],
      ['1024-bit RSA', small.privateKey, sealEnvelope(receiptBytes(), bound, keys.rsa)],
      ['ECDSA P-256 key', ecdsa, envelopes.p256],
      ['AES key', aes, envelopes.p256],
      [
        'a plain object',
        { type: 'private', algorithm: { name: 'ECDH', namedCurve: 'P-256' }, usages: ['deriveBits'] },
        envelopes.p256,
      ],
      ['null', null, envelopes.rsa],
    ];
    for (const [what, key, envelope] of refusals) {
      const error = await openEnvelope(envelope, key as never).catch((caught: unknown) => caught);
      expect({ what, error }).toEqual({ what, error: new EnvelopeError() });
      expect(error).toBeInstanceOf(EnvelopeError);
    }
  });
});

describe('generateDeviceKey', () => {
  it.each(['ECDH-ES+A256KW', 'RSA-OAEP-256'] as const)(
    '%s: a non-extractable private key that opens what the server seals for its public key',
    async (algorithm) => {
      const device = await generateDeviceKey({ algorithm });
      expect(device.algorithm).toBe(algorithm);
      expect(device.privateKey.extractable).toBe(false);
      await expect(crypto.subtle.exportKey('pkcs8', device.privateKey)).rejects.toThrow();
      await expect(exportPrivateKey(device.privateKey)).rejects.toThrow();
      // The service parses the public key as it would from POST /api/v1/onboarding/keys.
      const publicKey = parsePublicKey(device.publicKey);
      expect(publicKey.asymmetricKeyType).toBe(algorithm === 'RSA-OAEP-256' ? 'rsa' : 'ec');
      expect(publicKey.export({ format: 'jwk' })).toMatchObject(device.publicJwk);
      expect(Object.keys(device.publicJwk).sort()).toEqual(
        algorithm === 'RSA-OAEP-256' ? ['e', 'kty', 'n'] : ['crv', 'kty', 'x', 'y'],
      );
      const envelope = sealEnvelope(receiptBytes(), bound, { keyId: 'device', publicKey });
      expect(await openEnvelope(envelope, device.privateKey)).toEqual(receiptJson);
      // jose opens it with the same non-extractable key: nothing SDK-specific about the format.
      const jose = await flattenedDecrypt(toFlattenedJwe(envelope), device.privateKey);
      expect(Buffer.from(jose.plaintext).equals(receiptBytes())).toBe(true);
    },
  );

  it('defaults to P-256, and is extractable only when asked, for the server-side decrypt', async () => {
    const device = await generateDeviceKey({ extractable: true });
    expect(device.algorithm).toBe('ECDH-ES+A256KW');
    expect(device.privateKey.extractable).toBe(true);
    const pkcs8 = await exportPrivateKey(device.privateKey);
    const reimported = await importPrivateKey(pkcs8);
    expect(reimported.algorithm).toBe('ECDH-ES+A256KW');
    const envelope = sealEnvelope(receiptBytes(), bound, {
      keyId: 'device',
      publicKey: parsePublicKey(device.publicKey),
    });
    expect(await openEnvelope(envelope, reimported.privateKey)).toEqual(receiptJson);
  });

  it('refuses an algorithm it does not know', async () => {
    await expect(generateDeviceKey({ algorithm: 'RSA1_5' as 'RSA-OAEP-256' })).rejects.toThrow(TypeError);
  });
});

describe('importPrivateKey', () => {
  it('reads base64 DER and PEM PKCS#8 of either type, and refuses anything else', async () => {
    for (const recipient of [keys.rsa, keys.p256]) {
      const pem = recipient.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      for (const text of [recipient.pkcs8, pem]) {
        const { privateKey } = await importPrivateKey(text);
        expect(privateKey.extractable).toBe(false);
        const kind = recipient === keys.rsa ? 'rsa' : 'p256';
        expect(await openEnvelope(envelopes[kind], privateKey)).toEqual(receiptJson);
      }
    }
    await expect(importPrivateKey('not a key')).rejects.toThrow(TypeError);
    await expect(importPrivateKey(Buffer.from('garbage').toString('base64'))).rejects.toThrow(TypeError);
  });
});
