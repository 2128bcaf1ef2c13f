import { closeSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** The two operations the simulated providers need from a collection of stored objects. */
export interface Store<V> {
  get(key: string): V | undefined;
  set(key: string, value: V): void;
}

/**
 * Where the sandbox keeps payments, orders and idempotency results. In memory it forgets them on stop;
 * on disk it is an append-only journal (one JSON line per write, later lines win), so a payment made
 * before a restart can still be read after it, as it could be from the real provider. Appending costs
 * the same whatever the journal's length, where rewriting one JSON file per payment would grow with
 * every payment the data folder has seen.
 */
export interface SandboxJournal {
  store<V>(name: string): Store<V>;
  /** Lines that could not be read back (a write torn by a crash); they are skipped. */
  readonly skipped: number;
  close(): void;
}

interface Line {
  store: string;
  key: string;
  value: unknown;
}

const isLine = (value: unknown): value is Line =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as Line).store === 'string' &&
  typeof (value as Line).key === 'string' &&
  'value' in value;

export function memoryJournal(): SandboxJournal {
  return { store: <V>() => new Map<string, V>(), skipped: 0, close: () => undefined };
}

/**
 * Opens (or creates) the journal at `file`. Writes are synchronous appends: each is one small line,
 * they keep the order the requests committed in, and the response is sent only once its write is
 * with the operating system, so a payment the client heard of is never lost to a Ctrl-C.
 */
export function fileJournal(file: string): SandboxJournal {
  mkdirSync(dirname(file), { recursive: true });
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const restored = new Map<string, Map<string, unknown>>();
  let skipped = 0;
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = undefined;
    }
    if (!isLine(parsed)) {
      skipped += 1;
      continue;
    }
    let entries = restored.get(parsed.store);
    if (!entries) restored.set(parsed.store, (entries = new Map()));
    entries.set(parsed.key, parsed.value);
  }
  const fd = openSync(file, 'a', 0o600);
  // A torn last line has no newline: start on a fresh one so the next entry is readable.
  if (text.length > 0 && !text.endsWith('\n')) writeSync(fd, '\n');
  let open = true;

  return {
    skipped,
    store<V>(name: string): Store<V> {
      let entries = restored.get(name) as Map<string, V> | undefined;
      if (!entries) restored.set(name, (entries = new Map<string, V>()));
      const map = entries;
      return {
        get: (key) => map.get(key),
        set(key, value) {
          if (!open) throw new Error('gateway sandbox journal is closed');
          writeSync(fd, `${JSON.stringify({ store: name, key, value })}\n`);
          map.set(key, value);
        },
      };
    },
    close() {
      if (!open) return;
      open = false;
      closeSync(fd);
    },
  };
}
