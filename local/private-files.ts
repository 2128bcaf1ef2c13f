import { chmod, mkdir } from 'node:fs/promises';

/**
 * The local data folder holds the escrow private key and every table: only its owner may list or
 * read it. mkdir's mode applies only to a folder it creates (and is masked by the umask), so an
 * existing or umask-widened folder is tightened explicitly.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/** Key files are the owner's alone: 0600 whatever mode an older version or a copy left them with. */
export async function ensurePrivateFile(file: string): Promise<void> {
  await chmod(file, 0o600);
}
