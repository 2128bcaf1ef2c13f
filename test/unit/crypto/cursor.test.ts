import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  CursorCodec,
  CursorKeyError,
  cursorKeyFromSecret,
  inMemoryCursorKey,
  MAX_CURSOR_CHARS,
  newCursorKeySecret,
  type CursorKeySource,
  type CursorScope,
  type PageKey,
  type PageKeyShape,
} from '../../../lib/crypto/cursor.js';
import { CursorRefusedError } from '../../../lib/crypto/errors.js';
import { errorResponse } from '../../../lib/http/error-envelope.js';
import { CURSOR_KEY_FILE, localCursorKeyFile } from '../../../local/cursor-key.js';

const NAMES: PageKeyShape = {
  names: ['recipientUserId', 'createdAt', 'merchantClientId', 'receiptId'],
  resourceAttribute: 'recipientUserId',
};
const scope: CursorScope = {
  list: 'inbox',
  resourceId: '6f1c1b8e-2f8a-4c43-9b7e-3f0d6f0f4b11',
  clientId: 'client-7d2f4a',
};
const pageKey: PageKey = {
  recipientUserId: scope.resourceId,
  createdAt: '2026-03-01T10:00:00.000Z',
  merchantClientId: 'merchant-client-91ab',
  receiptId: '0b9f7c1e-5d55-4b6a-8c1e-2b7d3e9f0a42',
};

const REFUSAL = new CursorRefusedError().message;

/** The refusal `open` throws, checked to be the one refusal with the one message. */
async function refusal(promise: Promise<unknown>): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(CursorRefusedError);
  expect((error as Error).message).toBe(REFUSAL);
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('sealed paging cursors', () => {
  const codec = new CursorCodec(inMemoryCursorKey());

  it('opens what it sealed, for the same scope', async () => {
    const cursor = await codec.seal(scope, pageKey);
    await expect(codec.open(cursor, scope, NAMES)).resolves.toEqual(pageKey);
  });

  it('shows nothing: no id, attribute name or value, in the text or its base64url decoding', async () => {
    const cursor = await codec.seal(scope, pageKey);
    const decoded = Buffer.from(cursor, 'base64url').toString('latin1');
    for (const text of [cursor, decoded]) {
      for (const secret of [...Object.values(scope), ...Object.keys(pageKey), ...Object.values(pageKey)]) {
        expect(text).not.toContain(secret);
      }
    }
    expect(() => JSON.parse(decoded) as unknown).toThrow();
    // A fresh IV each time: the same position never gives the same cursor twice.
    expect(await codec.seal(scope, pageKey)).not.toBe(cursor);
  });

  it('refuses every cursor with one byte changed', async () => {
    const sealed = Buffer.from(await codec.seal(scope, pageKey), 'base64url');
    for (let index = 0; index < sealed.length; index += 1) {
      const edited = Buffer.from(sealed);
      edited[index]! ^= 0x01;
      await refusal(codec.open(edited.toString('base64url'), scope, NAMES));
    }
  });

  it('refuses every cursor with one character changed, also where base64 has spare bits', async () => {
    // The last character carries bits beyond the last byte unless the length is a multiple of 3:
    // three positions whose sealed lengths leave 0, 1 and 2 bytes over.
    const lengths = new Set<number>();
    for (const suffix of ['', 'x', 'xy']) {
      const position = { ...pageKey, merchantClientId: `${pageKey.merchantClientId}${suffix}` };
      const cursor = await codec.seal(scope, position);
      lengths.add(Buffer.from(cursor, 'base64url').length % 3);
      await expect(codec.open(cursor, scope, NAMES)).resolves.toEqual(position);
      const places = [0, 1, Math.floor(cursor.length / 2), cursor.length - 2, cursor.length - 1];
      for (const place of places) {
        for (const replacement of ALPHABET) {
          if (replacement === cursor[place]) continue;
          const edited = cursor.slice(0, place) + replacement + cursor.slice(place + 1);
          await refusal(codec.open(edited, scope, NAMES));
        }
      }
    }
    expect([...lengths].sort()).toEqual([0, 1, 2]);
  });

  it('refuses a cursor made for another list, resource or client', async () => {
    const cursor = await codec.seal(scope, pageKey);
    for (const other of [
      { ...scope, list: 'webhook-deliveries' },
      { ...scope, resourceId: '1d1c1b8e-2f8a-4c43-9b7e-3f0d6f0f4b11' },
      { ...scope, clientId: 'client-other' },
    ]) {
      await refusal(codec.open(cursor, other, NAMES));
    }
  });

  it('refuses a cursor sealed under another key', async () => {
    const other = new CursorCodec(inMemoryCursorKey());
    await refusal(codec.open(await other.seal(scope, pageKey), scope, NAMES));
  });

  it('refuses a sealed position of another shape than the list asks for, or in another partition', async () => {
    const deliveries: PageKeyShape = {
      names: ['webhookId', 'deliveryId', 'createdAt'],
      resourceAttribute: 'webhookId',
    };
    await refusal(codec.open(await codec.seal(scope, pageKey), scope, deliveries));
    const elsewhere: PageKey = { ...pageKey, recipientUserId: 'another-user' };
    await refusal(codec.open(await codec.seal(scope, elsewhere), scope, NAMES));
    const missing: PageKey = { recipientUserId: 'u', createdAt: 'c', merchantClientId: 'm' };
    await refusal(codec.open(await codec.seal(scope, missing), scope, NAMES));
    const empty: PageKey = { ...pageKey, receiptId: '' };
    await refusal(codec.open(await codec.seal(scope, empty), scope, NAMES));
    const long: PageKey = { ...pageKey, receiptId: 'x'.repeat(1025) };
    await refusal(codec.open(await codec.seal(scope, long), scope, NAMES));
  });

  it('refuses what is not a cursor: empty, short, too long, another alphabet, another version', async () => {
    const cursor = await codec.seal(scope, pageKey);
    const sealed = Buffer.from(cursor, 'base64url');
    const otherVersion = Buffer.from(sealed);
    otherVersion[0] = 2;
    for (const bad of [
      '',
      'not-a-cursor',
      Buffer.alloc(29).toString('base64url'),
      cursor.slice(0, -4),
      `${cursor}AAAA`,
      'A'.repeat(MAX_CURSOR_CHARS + 4),
      `${cursor.slice(0, 10)}+/${cursor.slice(12)}`,
      `${cursor}=`,
      otherVersion.toString('base64url'),
      Buffer.from(JSON.stringify({ u: scope.resourceId })).toString('base64url'),
    ]) {
      await refusal(codec.open(bad, scope, NAMES));
    }
  });

  it('round-trips any position and scope, and opens it for no other scope', async () => {
    const text = fc.string({ minLength: 1, maxLength: 60, unit: 'grapheme' });
    await fc.assert(
      fc.asyncProperty(
        fc.record({ list: text, resourceId: text, clientId: text }),
        text,
        text,
        async (anyScope, b, otherClient) => {
          const shape: PageKeyShape = { names: ['a', 'b'], resourceAttribute: 'a' };
          const position = { a: anyScope.resourceId, b };
          const cursor = await codec.seal(anyScope, position);
          await expect(codec.open(cursor, anyScope, shape)).resolves.toEqual(position);
          if (otherClient !== anyScope.clientId) {
            await refusal(codec.open(cursor, { ...anyScope, clientId: otherClient }, shape));
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('refuses any string it did not seal', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 400 }), async (anything) => {
        await refusal(codec.open(anything, scope, NAMES));
      }),
      { numRuns: 200 },
    );
  });
});

describe('a refused cursor over HTTP', () => {
  it('is 400 INVALID_CURSOR naming the cursor field, with the one message', () => {
    const response = errorResponse(new CursorRefusedError(), 'request-1', new Date(0));
    expect(response.statusCode).toBe(400);
    const body = JSON.parse(response.body) as {
      error: { code: string; message: string; details: { fields: { field: string; message: string }[] } };
    };
    expect(body.error.code).toBe('INVALID_CURSOR');
    expect(body.error.message).toBe(REFUSAL);
    expect(body.error.details.fields).toEqual([{ field: 'cursor', message: CursorRefusedError.problem }]);
  });
});

describe('the cursor key', () => {
  it('derives one 256-bit key per secret, and refuses a short secret', () => {
    const secret = newCursorKeySecret();
    expect(cursorKeyFromSecret(secret)).toHaveLength(32);
    expect(cursorKeyFromSecret(secret).equals(cursorKeyFromSecret(secret))).toBe(true);
    expect(cursorKeyFromSecret(secret).equals(cursorKeyFromSecret(newCursorKeySecret()))).toBe(false);
    expect(() => cursorKeyFromSecret('too-short')).toThrow(CursorKeyError);
  });

  it('is read once however many cursors are sealed and opened', async () => {
    let loads = 0;
    const secret = newCursorKeySecret();
    const codec = new CursorCodec({
      load: () => {
        loads += 1;
        return Promise.resolve(secret);
      },
    });
    const cursors = await Promise.all(Array.from({ length: 5 }, () => codec.seal(scope, pageKey)));
    await Promise.all(cursors.map((cursor) => codec.open(cursor, scope, NAMES)));
    expect(loads).toBe(1);
    // Another process with the same secret (another Lambda instance) opens them too.
    await expect(new CursorCodec(inMemoryCursorKey(secret)).open(cursors[0]!, scope, NAMES)).resolves.toEqual(
      pageKey,
    );
  });

  it('an unreadable key is an outage, not a refused cursor, and the next call reads again', async () => {
    const outage = new Error('Secrets Manager is unreachable');
    let fail = true;
    const source: CursorKeySource = {
      load: () => (fail ? Promise.reject(outage) : Promise.resolve(newCursorKeySecret())),
    };
    const codec = new CursorCodec(source);
    await expect(codec.open('anything', scope, NAMES)).rejects.toBe(outage);
    await expect(codec.seal(scope, pageKey)).rejects.toBe(outage);
    fail = false;
    const cursor = await codec.seal(scope, pageKey);
    await expect(codec.open(cursor, scope, NAMES)).resolves.toEqual(pageKey);
  });
});

describe("the local stack's cursor key file", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cursor-key-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is made on first start, 0600, and kept: a cursor from before a restart opens after it', async () => {
    const first = new CursorCodec(await localCursorKeyFile(dir));
    const file = join(dir, CURSOR_KEY_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const written = await readFile(file, 'utf8');
    const cursor = await first.seal(scope, pageKey);
    const restarted = new CursorCodec(await localCursorKeyFile(dir));
    expect(await readFile(file, 'utf8')).toBe(written);
    await expect(restarted.open(cursor, scope, NAMES)).resolves.toEqual(pageKey);
  });

  it('refuses to start on a damaged file, naming the problem', async () => {
    const damaged = await mkdtemp(join(tmpdir(), 'cursor-key-damaged-'));
    try {
      await writeFile(join(damaged, CURSOR_KEY_FILE), 'short', { mode: 0o600 });
      await expect(localCursorKeyFile(damaged)).rejects.toThrow(CursorKeyError);
    } finally {
      await rm(damaged, { recursive: true, force: true });
    }
  });
});
