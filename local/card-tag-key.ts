/**
 * The local stack's card-tag key: a file in the data folder plays the part of the Secrets Manager
 * secret in AWS (lib/wiring/aws-card-tags.ts), behind the same port. Made on first start, 0600.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CardTagKeyError,
  formatCardTagVersions,
  parseCardTagVersions,
  withNewVersion,
  type CardTagKeyStore,
  type CardTagKeyVersion,
} from '../lib/crypto/card-tag.js';
import { ensurePrivateDir, ensurePrivateFile } from './private-files.js';

export const CARD_TAG_KEY_FILE = 'card-tag-keys.json';

function decode(text: string, file: string): CardTagKeyVersion[] {
  try {
    return parseCardTagVersions(text);
  } catch (error) {
    // Never regenerate over a damaged file: every stored card tag would stop matching its card.
    throw new CardTagKeyError(`Card-tag key file ${file} cannot be read; fix or restore it`, {
      cause: error,
    });
  }
}

export class LocalCardTagKeyFile implements CardTagKeyStore {
  readonly file: string;

  private constructor(dir: string) {
    this.file = join(dir, CARD_TAG_KEY_FILE);
  }

  /** Opens `<dir>/card-tag-keys.json`, creating it with version 1 on first start. */
  static async loadOrCreate(dir: string): Promise<LocalCardTagKeyFile> {
    await ensurePrivateDir(dir);
    const store = new LocalCardTagKeyFile(dir);
    try {
      // 'wx': two processes starting together cannot overwrite each other's key.
      await writeFile(store.file, formatCardTagVersions(withNewVersion([])), { mode: 0o600, flag: 'wx' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    // writeFile's mode is masked by the umask, and an older copy may be wider.
    await ensurePrivateFile(store.file);
    await store.load();
    return store;
  }

  async load(): Promise<CardTagKeyVersion[]> {
    return decode(await readFile(this.file, 'utf8'), this.file);
  }

  async addVersion(): Promise<number> {
    const versions = withNewVersion(await this.load());
    // Written beside and renamed over, so a crash leaves the old file or the new one, never half of one.
    const temporary = `${this.file}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(temporary, formatCardTagVersions(versions), { mode: 0o600, flag: 'wx' });
    await ensurePrivateFile(temporary);
    await rename(temporary, this.file);
    return versions[versions.length - 1]!.version;
  }
}
