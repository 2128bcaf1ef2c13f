/**
 * Card tags: what the service stores and looks cards up by instead of a hashedPan. A hashedPan is an
 * unsalted SHA-256 of a card number, which a table copy gives back by brute force in minutes under a
 * known BIN; a tag is HMAC-SHA256 under a server-held key (PCI DSS v4.0 3.5.1.1), so without the key a
 * copy gives nothing back.
 *
 * The key has versions. Version 1 tags the hashedPan itself; version n > 1 tags the version n-1 tag:
 *
 *     T1 = HMAC(K1, hashedPan)      Tn = HMAC(Kn, "retag" || T(n-1))
 *
 * so a stored record is moved to a newer version from what is stored, without the hashedPan the
 * service never keeps. Finding a record computes the chain up to each version, current first. A copy
 * of a re-tagged table needs every key of the chain to test a guess.
 *
 * Facts about an escrowed receipt that a claim is matched on (amounts, currency, time, last four) are
 * sealed with AES-256-GCM under a key derived from the same version's key and bound to the tag, so
 * nothing at rest shows an amount beside its card without the card-tag key.
 *
 * No SDK and no filesystem here: the key versions come from a CardTagKeySource (lib/wiring/ in AWS,
 * local/ on the local stack).
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import type { Clock } from '../kernel/clock.js';

export interface CardTagKeyVersion {
  version: number;
  /** 32 random bytes. */
  key: Buffer;
}

/** Where the key versions live; read once, then again at most every `maxAgeMs` (rotation lands). */
export interface CardTagKeySource {
  load(): Promise<CardTagKeyVersion[]>;
}

/** The operator's side of the same place: rotation adds a version and never removes one. */
export interface CardTagKeyStore extends CardTagKeySource {
  /** Adds a version one above the highest and returns its number. */
  addVersion(): Promise<number>;
}

/** A stored tag: `v<version>.<base64url HMAC>`. The version says which keys it has been through. */
export type CardTag = string;

/** What an escrowed receipt is claimed by, sealed at rest. */
export interface ClaimFacts {
  /** The receipt's total, and its total before tip when it has a tip: minor units. */
  amounts: number[];
  currency: string;
  /** The card transaction's time, ISO 8601. */
  at: string;
  cardLast4?: string;
  /** The card network's references the service sealed in the receipt (its cardTransaction), when any. */
  authorizationCode?: string;
  networkTransactionId?: string;
}

const TAG_PATTERN = /^v([1-9][0-9]{0,5})\.([A-Za-z0-9_-]{43})$/;
const KEY_BYTES = 32;

export class CardTagKeyError extends Error {}

export const tagVersion = (tag: CardTag): number | undefined => {
  const match = TAG_PATTERN.exec(tag);
  return match ? Number(match[1]) : undefined;
};

/** A short prefix for audit records and logs: enough to correlate two records, not to find a card. */
export const cardTagPrefix = (tag: CardTag): string => {
  const dot = tag.indexOf('.');
  return dot < 0 ? '' : tag.slice(0, dot + 7);
};

export class CardTagKeyring {
  private readonly keys = new Map<number, Buffer>();
  readonly currentVersion: number;

  constructor(versions: readonly CardTagKeyVersion[]) {
    if (versions.length === 0) throw new CardTagKeyError('card-tag key: no versions');
    for (const { version, key } of versions) {
      if (!Number.isInteger(version) || version < 1)
        throw new CardTagKeyError(`card-tag key: bad version ${version}`);
      if (key.length !== KEY_BYTES)
        throw new CardTagKeyError(`card-tag key version ${version}: must be ${KEY_BYTES} bytes`);
      this.keys.set(version, key);
    }
    this.currentVersion = Math.max(...this.keys.keys());
    // The chain needs every version from 1 up: a missing one would strand every record behind it.
    for (let version = 1; version <= this.currentVersion; version += 1) {
      if (!this.keys.has(version)) throw new CardTagKeyError(`card-tag key: version ${version} is missing`);
    }
  }

  private key(version: number): Buffer {
    const key = this.keys.get(version);
    if (!key) throw new CardTagKeyError(`card-tag key version ${version} is unknown`);
    return key;
  }

  /** Each version's key as a KeyObject, made once: createHmac is ~13 µs slower handed a Buffer (lib/crypto/envelope.ts). */
  private readonly hmacKeys = new Map<number, KeyObject>();

  private step(version: number, input: Buffer): Buffer {
    let key = this.hmacKeys.get(version);
    if (key === undefined) {
      key = createSecretKey(this.key(version));
      this.hmacKeys.set(version, key);
    }
    const hmac = createHmac('sha256', key);
    if (version > 1) hmac.update('retag');
    return hmac.update(input).digest();
  }

  /** Tags of a hashedPan under every version, current first: write with the first, look up with all. */
  tagsOf(hashedPan: string): CardTag[] {
    const tags: CardTag[] = [];
    let value: Buffer = this.step(1, Buffer.from(hashedPan, 'utf8'));
    tags.push(`v1.${value.toString('base64url')}`);
    for (let version = 2; version <= this.currentVersion; version += 1) {
      value = this.step(version, value);
      tags.push(`v${version}.${value.toString('base64url')}`);
    }
    return tags.reverse();
  }

  /** The tag a record is written with. */
  tagOf(hashedPan: string): CardTag {
    return this.tagsOf(hashedPan)[0]!;
  }

  /** The same card's tag under the current version, computed from a stored older tag. */
  advance(tag: CardTag): CardTag {
    const match = TAG_PATTERN.exec(tag);
    if (!match) throw new CardTagKeyError('not a card tag');
    let version = Number(match[1]);
    if (version > this.currentVersion)
      throw new CardTagKeyError(`card-tag key version ${version} is unknown`);
    let value: Buffer = Buffer.from(match[2]!, 'base64url');
    while (version < this.currentVersion) {
      version += 1;
      value = this.step(version, value);
    }
    return `v${version}.${value.toString('base64url')}`;
  }

  isCurrent(tag: CardTag): boolean {
    return tagVersion(tag) === this.currentVersion;
  }

  /**
   * A key for another purpose (its own HKDF label) from a version's key, current unless named: what
   * the service seals for itself at rest (lib/crypto/sealed-record.ts) goes through it.
   */
  derivedKey(purpose: string, version = this.currentVersion): { version: number; key: KeyObject } {
    const name = `${version}:${purpose}`;
    let key = this.derivedKeys.get(name);
    if (key === undefined) {
      key = createSecretKey(Buffer.from(hkdfSync('sha256', this.key(version), Buffer.alloc(0), purpose, 32)));
      this.derivedKeys.set(name, key);
    }
    return { version, key };
  }

  /**
   * Each derived key made once, as a KeyObject: an encrypt derives several (one per evidence entry and
   * its seal), and an HKDF plus a Buffer key's slow path in createHmac/createCipheriv cost ~0.2 ms a
   * request when made each time (a CPU profile of encrypt, 2026-11-25).
   */
  private readonly derivedKeys = new Map<string, KeyObject>();

  /**
   * What a card's claim allowance is counted under (with the issuer client): the same for every
   * registration of the card, whatever its user, and opaque, so the rate-limit table (not under the
   * card-tag tables' key) holds no card tag.
   */
  allowanceSubject(tag: CardTag): string {
    const current = this.advance(tag);
    const mac = createHmac('sha256', this.derivedKey('claim-allowance').key)
      .update(current)
      .digest('base64url');
    return `v${this.currentVersion}.${mac}`;
  }

  private factsKey(tag: CardTag): Buffer {
    const version = tagVersion(tag);
    if (version === undefined) throw new CardTagKeyError('not a card tag');
    return Buffer.from(hkdfSync('sha256', this.key(version), Buffer.alloc(0), 'receipt-claim-facts', 32));
  }

  /** Seals claim facts for one tag: AES-256-GCM, the tag as additional data, `iv.ciphertext.tag`. */
  sealFacts(tag: CardTag, facts: ClaimFacts): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.factsKey(tag), iv);
    cipher.setAAD(Buffer.from(tag, 'utf8'));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(facts), 'utf8'), cipher.final()]);
    return [iv, sealed, cipher.getAuthTag()].map((part) => part.toString('base64url')).join('.');
  }

  /** The facts sealed for this tag, or undefined when they were sealed for another tag or altered. */
  openFacts(tag: CardTag, sealed: string): ClaimFacts | undefined {
    const [iv, body, authTag, extra] = sealed.split('.');
    if (iv === undefined || body === undefined || authTag === undefined || extra !== undefined)
      return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.factsKey(tag), Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(tag, 'utf8'));
      decipher.setAuthTag(Buffer.from(authTag, 'base64url'));
      const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as ClaimFacts;
    } catch {
      return undefined;
    }
  }
}

/** A new key version's material. */
export const newCardTagKey = (): Buffer => randomBytes(KEY_BYTES);

/**
 * The keyring a process uses: loaded on first use and again once `maxAgeMs` has passed, so a rotation
 * reaches running functions without a redeploy. A failed reload keeps the last good keyring.
 */
export class CardTags {
  private cached: { keyring: CardTagKeyring; loadedAt: number } | undefined;
  private loading: Promise<CardTagKeyring> | undefined;

  constructor(
    private readonly source: CardTagKeySource,
    private readonly clock: Clock,
    private readonly maxAgeMs: number,
  ) {}

  async keyring(): Promise<CardTagKeyring> {
    const now = this.clock.now().getTime();
    if (this.cached && now - this.cached.loadedAt < this.maxAgeMs) return this.cached.keyring;
    this.loading ??= this.source
      .load()
      .then((versions) => {
        const keyring = new CardTagKeyring(versions);
        this.cached = { keyring, loadedAt: this.clock.now().getTime() };
        return keyring;
      })
      .catch((error: unknown) => {
        if (this.cached) return this.cached.keyring;
        throw error;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  /** Forgets the cached keyring: the next use reads the source (after a rotation in this process). */
  invalidate(): void {
    this.cached = undefined;
  }
}

/** The versions after one more: what every store's addVersion writes. */
export const withNewVersion = (versions: readonly CardTagKeyVersion[]): CardTagKeyVersion[] => [
  ...versions,
  { version: Math.max(0, ...versions.map((entry) => entry.version)) + 1, key: newCardTagKey() },
];

/**
 * The stored form of the versions, the same in the Secrets Manager secret and the local key file:
 * `{"versions":[{"version":1,"key":"<base64 of 32 random bytes>"},…]}`.
 */
export const formatCardTagVersions = (versions: readonly CardTagKeyVersion[]): string =>
  `${JSON.stringify(
    { versions: versions.map(({ version, key }) => ({ version, key: key.toString('base64') })) },
    null,
    2,
  )}\n`;

export function parseCardTagVersions(text: string): CardTagKeyVersion[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CardTagKeyError('card-tag key versions are not JSON');
  }
  const { versions = [], seed } = parsed as { versions?: unknown; seed?: unknown };
  // A secret CloudFormation generated holds a random seed: version 1 is derived from it, so the key
  // material never passes through a template. Rotation writes explicit versions beside it.
  const seeded =
    typeof seed === 'string' && seed.length >= 32
      ? [{ version: 1, key: Buffer.from(hkdfSync('sha256', seed, Buffer.alloc(0), 'card-tag-key-v1', 32)) }]
      : [];
  if (!Array.isArray(versions)) throw new CardTagKeyError('card-tag key versions: no `versions` list');
  if (seeded.length === 0 && versions.length === 0)
    throw new CardTagKeyError('card-tag key versions: neither a seed nor versions');
  return [
    ...seeded,
    ...versions.map((entry: unknown) => {
      const { version, key } = entry as { version?: unknown; key?: unknown };
      if (typeof version !== 'number' || typeof key !== 'string')
        throw new CardTagKeyError('card-tag key versions: each needs a number and a base64 key');
      return { version, key: Buffer.from(key, 'base64') };
    }),
  ];
}

/** A keyring held in memory only: `--in-memory` runs and tests. */
export const inMemoryCardTagKeys = (): CardTagKeyStore => {
  let versions: CardTagKeyVersion[] = withNewVersion([]);
  return {
    load: async () => versions,
    addVersion: async () => {
      versions = withNewVersion(versions);
      return versions.length;
    },
  };
};
