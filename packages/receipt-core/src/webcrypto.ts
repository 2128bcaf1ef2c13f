/**
 * WebCrypto types that compile both against the DOM library (the SDK's own build, for browsers and
 * React Native) and against @types/node (the repository's tests, which import these sources): the
 * global CryptoKey and crypto.subtle are the same objects in both, only their declarations differ.
 */

export type WebCryptoSubtle = typeof globalThis.crypto.subtle;
/**
 * The platform's CryptoKey: the DOM's in a browser, node:crypto's webcrypto.CryptoKey in Node. Named
 * through `crypto.subtle`, which both declare, not through the global `CryptoKey`, which @types/node
 * (20, 22) does not declare: an app's Node-only project, without the DOM library, compiles too.
 */
export type WebCryptoKey = Awaited<ReturnType<WebCryptoSubtle['importKey']>>;

/** The members of CryptoKey.algorithm the SDK reads (RsaHashedKeyAlgorithm, EcKeyAlgorithm). */
export interface KeyAlgorithmMembers {
  name: string;
  hash?: { name: string };
  modulusLength?: number;
  namedCurve?: string;
}

export function subtle(): WebCryptoSubtle {
  const found = (globalThis as { crypto?: { subtle?: WebCryptoSubtle } }).crypto?.subtle;
  if (found === undefined) {
    throw new Error(
      'WebCrypto (globalThis.crypto.subtle) is not available: install a WebCrypto implementation',
    );
  }
  return found;
}
