import { LocalEscrowKey } from '../../local/escrow-key.js';

/**
 * The run's escrow key, written once by test/support/global-setup.js (as one deployment has one KMS
 * key): a fresh RSA key for each of the run's ~45 local stacks and use-case worlds cost about 3 s of
 * CPU. Each of them still has tables of its own. Outside a run that made one, a fresh key in memory.
 */
export function runEscrowKey(): Promise<LocalEscrowKey> {
  const folder = process.env.TEST_ESCROW_KEY_DIR;
  return folder ? LocalEscrowKey.loadOrCreate(folder) : LocalEscrowKey.inMemory();
}
