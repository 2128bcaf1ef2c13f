import { createHmac } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '../../../lib/kernel/clock.js';
import {
  CardTagKeyError,
  CardTagKeyring,
  CardTags,
  cardTagPrefix,
  formatCardTagVersions,
  inMemoryCardTagKeys,
  newCardTagKey,
  parseCardTagVersions,
  tagVersion,
} from '../../../lib/crypto/card-tag.js';

const pan = 'a'.repeat(64);
const facts = { amounts: [1748, 1548], currency: 'USD', at: '2026-11-21T09:15:00.000Z', cardLast4: '4242' };

describe('card tags', () => {
  const k1 = newCardTagKey();
  const k2 = newCardTagKey();
  const v1 = new CardTagKeyring([{ version: 1, key: k1 }]);
  const v2 = new CardTagKeyring([
    { version: 1, key: k1 },
    { version: 2, key: k2 },
  ]);

  it('is HMAC-SHA256 of the hashedPan under version 1, and carries no part of the hashedPan', () => {
    const tag = v1.tagOf(pan);
    expect(tag).toBe(`v1.${createHmac('sha256', k1).update(pan).digest('base64url')}`);
    expect(tag).not.toContain(pan.slice(0, 8));
    expect(new CardTagKeyring([{ version: 1, key: newCardTagKey() }]).tagOf(pan)).not.toBe(tag);
  });

  it('writes with the current version and looks up with every version, current first', () => {
    const tags = v2.tagsOf(pan);
    expect(tags.map(tagVersion)).toEqual([2, 1]);
    expect(tags[1]).toBe(v1.tagOf(pan));
    expect(v2.tagOf(pan)).toBe(tags[0]);
  });

  it('moves a stored older tag to the current version without the hashedPan', () => {
    expect(v2.advance(v1.tagOf(pan))).toBe(v2.tagOf(pan));
    expect(v2.advance(v2.tagOf(pan))).toBe(v2.tagOf(pan));
    expect(() => v1.advance(v2.tagOf(pan))).toThrow(CardTagKeyError);
    expect(() => v2.advance('not a tag')).toThrow(CardTagKeyError);
  });

  it('refuses a keyring with a gap in its versions or a short key', () => {
    expect(() => new CardTagKeyring([{ version: 2, key: k2 }])).toThrow('version 1 is missing');
    expect(() => new CardTagKeyring([{ version: 1, key: Buffer.alloc(16) }])).toThrow('32 bytes');
    expect(() => new CardTagKeyring([])).toThrow(CardTagKeyError);
  });

  it('seals claim facts for one tag only: another tag, another key or a changed byte opens nothing', () => {
    const tag = v1.tagOf(pan);
    const sealed = v1.sealFacts(tag, facts);
    expect(sealed).not.toContain('1748');
    expect(v1.openFacts(tag, sealed)).toEqual(facts);
    expect(v1.openFacts(v1.tagOf('b'.repeat(64)), sealed)).toBeUndefined();
    expect(new CardTagKeyring([{ version: 1, key: newCardTagKey() }]).openFacts(tag, sealed)).toBeUndefined();
    const [iv, body, authTag] = sealed.split('.') as [string, string, string];
    const flipped = Buffer.from(body, 'base64url');
    flipped[0] = flipped[0]! ^ 1;
    expect(v1.openFacts(tag, [iv, flipped.toString('base64url'), authTag].join('.'))).toBeUndefined();
    expect(v1.openFacts(tag, 'garbage')).toBeUndefined();
  });

  it('gives audit records a short prefix only', () => {
    const tag = v2.tagOf(pan);
    expect(cardTagPrefix(tag)).toBe(tag.slice(0, 9));
    expect(cardTagPrefix(tag)).toMatch(/^v2\.[\w-]{6}$/);
  });

  it('reads the source again once the keyring is older than its maximum age, so a rotation lands', async () => {
    const store = inMemoryCardTagKeys();
    const clock = new ManualClock(0);
    const cardTags = new CardTags(store, clock, 5_000);
    expect((await cardTags.keyring()).currentVersion).toBe(1);
    await store.addVersion();
    expect((await cardTags.keyring()).currentVersion).toBe(1);
    clock.advance(5_000);
    expect((await cardTags.keyring()).currentVersion).toBe(2);
  });

  it('keeps the last good keyring when a reload fails, and fails when there never was one', async () => {
    let fail = false;
    const versions = [{ version: 1, key: k1 }];
    const source = { load: async () => (fail ? Promise.reject(new Error('secret unreachable')) : versions) };
    const clock = new ManualClock(0);
    const cardTags = new CardTags(source, clock, 1_000);
    const first = await cardTags.keyring();
    fail = true;
    clock.advance(2_000);
    expect(await cardTags.keyring()).toBe(first);
    await expect(new CardTags(source, clock, 1_000).keyring()).rejects.toThrow('secret unreachable');
  });

  it('reads the stored versions back, and derives version 1 from a seed CloudFormation generated', () => {
    const versions = [
      { version: 1, key: k1 },
      { version: 2, key: k2 },
    ];
    expect(parseCardTagVersions(formatCardTagVersions(versions))).toEqual(versions);
    const seeded = parseCardTagVersions(JSON.stringify({ seed: 'x'.repeat(64) }));
    expect(seeded.map((entry) => [entry.version, entry.key.length])).toEqual([[1, 32]]);
    expect(parseCardTagVersions(JSON.stringify({ seed: 'x'.repeat(64) }))).toEqual(seeded);
    for (const bad of [
      'not json',
      '{}',
      JSON.stringify({ seed: 'short' }),
      JSON.stringify({ versions: [{ version: 1 }] }),
    ])
      expect(() => parseCardTagVersions(bad)).toThrow(CardTagKeyError);
  });
});
