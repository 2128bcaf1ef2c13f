/**
 * The local stack's cursor key: a file in the data folder plays the part of the Secrets Manager secret
 * in AWS (lib/wiring/aws-cursor-key.ts). Made on first start, 0600; kept across restarts so a cursor
 * handed out before a restart still opens after it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cursorKeyFromSecret, newCursorKeySecret, type CursorKeySource } from '../lib/crypto/cursor.js';
import { ensurePrivateDir, ensurePrivateFile } from './private-files.js';

export const CURSOR_KEY_FILE = 'cursor-key';

/** Opens `<dir>/cursor-key`, creating it on first start, and checks it holds a usable key. */
export async function localCursorKeyFile(dir: string): Promise<CursorKeySource> {
  await ensurePrivateDir(dir);
  const file = join(dir, CURSOR_KEY_FILE);
  try {
    // 'wx': two processes starting together cannot overwrite each other's key.
    await writeFile(file, newCursorKeySecret(), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  await ensurePrivateFile(file);
  const secret = (await readFile(file, 'utf8')).trim();
  // A damaged file fails the start, naming itself, rather than the first request that pages.
  cursorKeyFromSecret(secret);
  return { load: () => Promise.resolve(secret) };
}
