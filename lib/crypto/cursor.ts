/**
 * Paging cursors, sealed. A cursor is the DynamoDB LastEvaluatedKey a page ended at, encrypted with
 * AES-256-GCM under a server-held cursor key, with the list and the scope it was made for (the user or
 * webhook it pages, the client it was returned to) bound as GCM additional data. So a cursor shows
 * nothing (no client id, user id or key attribute), cannot be made or edited by a caller, and opens
 * only for the list, resource and client it was returned for: everything else is one refusal.
 *
 *     cursor = base64url( version || iv (12) || ciphertext || tag (16) )
 *     aad    = JSON [label, version, list, resourceId, clientId]
 *
 * The key is a dedicated secret (never the card-tag key): Secrets Manager in AWS
 * (lib/wiring/aws-cursor-key.ts), a file in the data folder on the local stack (local/cursor-key.ts).
 * Replacing it only invalidates cursors already handed out: a client starts its paging again.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { decodeBase64Url } from './base64.js';
import { CursorRefusedError } from './errors.js';

/** What a cursor is made for: a cursor of one list, resource or client is refused by every other. */
export interface CursorScope {
  /** Which list it pages, such as 'inbox'. */
  list: string;
  /** The resource the list belongs to: a user id, a webhook id. */
  resourceId: string;
  /** The client it was returned to. */
  clientId: string;
}

/** A DynamoDB LastEvaluatedKey whose attributes are all strings (every key of ours is). */
export type PageKey = Record<string, string>;

/** The attributes of a list's page key, and the one of them that holds the scope's resource id. */
export interface PageKeyShape {
  names: readonly string[];
  /** The partition attribute: a position in another partition would fail the query with a 500. */
  resourceAttribute: string;
}

/** Where the cursor key's secret text lives; read once per process (a cold start). */
export interface CursorKeySource {
  load(): Promise<string>;
}

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** The shortest secret accepted: 32 characters of the secret generators used carry >= 160 bits. */
const MIN_SECRET_CHARS = 32;
/** Far above any key of ours (~300 characters): the cap keeps the decryption away from large input. */
export const MAX_CURSOR_CHARS = 2048;
const MAX_ATTRIBUTE_CHARS = 1024;
const LABEL = 'receipt-service paging cursor';

export class CursorKeyError extends Error {}

/**
 * The 256-bit AES key from the secret's text (HKDF-SHA256 with the label as info): the text is
 * whatever generated it (CloudFormation's alphanumeric password, base64url of random bytes locally).
 */
export function cursorKeyFromSecret(secret: string): Buffer {
  if (secret.length < MIN_SECRET_CHARS)
    throw new CursorKeyError(`cursor key secret is shorter than ${MIN_SECRET_CHARS} characters`);
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.alloc(0), LABEL, KEY_BYTES));
}

/** A fresh secret's text: what the local key file holds and what a test stack is given. */
export const newCursorKeySecret = (): string => randomBytes(KEY_BYTES).toString('base64url');

/** A key held in memory for this process only: cursors do not outlive it (tests, `inMemory` stacks). */
export const inMemoryCursorKey = (secret: string = newCursorKeySecret()): CursorKeySource => ({
  load: () => Promise.resolve(secret),
});

const additionalData = (scope: CursorScope): Buffer =>
  Buffer.from(JSON.stringify([LABEL, VERSION, scope.list, scope.resourceId, scope.clientId]), 'utf8');

function isPageKey(value: unknown, shape: PageKeyShape, resourceId: string): value is PageKey {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const { names, resourceAttribute } = shape;
  const entries = Object.entries(value);
  return (
    (value as Record<string, unknown>)[resourceAttribute] === resourceId &&
    entries.length === names.length &&
    entries.every(
      ([name, attribute]) =>
        names.includes(name) &&
        typeof attribute === 'string' &&
        attribute.length > 0 &&
        attribute.length <= MAX_ATTRIBUTE_CHARS,
    )
  );
}

export class CursorCodec {
  private key: Promise<Buffer> | undefined;

  constructor(private readonly source: CursorKeySource) {}

  /** Read once; a failed read (an outage) is not kept, so the next request tries again. */
  private keyBytes(): Promise<Buffer> {
    this.key ??= this.source
      .load()
      .then(cursorKeyFromSecret)
      .catch((error: unknown) => {
        this.key = undefined;
        throw error;
      });
    return this.key;
  }

  async seal(scope: CursorScope, pageKey: PageKey): Promise<string> {
    const key = await this.keyBytes();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(additionalData(scope));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(pageKey), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, ciphertext, cipher.getAuthTag()]).toString('base64url');
  }

  /**
   * The page key a cursor holds, if it was sealed for exactly this scope and has the list's shape;
   * otherwise CursorRefusedError, the one refusal (400 INVALID_CURSOR over HTTP).
   */
  async open(cursor: string, scope: CursorScope, shape: PageKeyShape): Promise<PageKey> {
    // The key is read first, so an outage is an outage and not a refused cursor.
    const key = await this.keyBytes();
    // Canonical base64url only: otherwise an edited last character could decode to the same bytes.
    const sealed = cursor.length <= MAX_CURSOR_CHARS ? decodeBase64Url(cursor) : undefined;
    if (sealed === undefined || sealed.length <= 1 + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION)
      throw new CursorRefusedError();
    let pageKey: unknown;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 1 + IV_BYTES), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(additionalData(scope));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plaintext = Buffer.concat([
        decipher.update(sealed.subarray(1 + IV_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
      pageKey = JSON.parse(plaintext.toString('utf8'));
    } catch {
      throw new CursorRefusedError();
    }
    // Only this service seals cursors, so another shape is a bug or a stolen key: refused all the same.
    if (!isPageKey(pageKey, shape, scope.resourceId)) throw new CursorRefusedError();
    return pageKey;
  }
}
