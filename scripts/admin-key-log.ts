import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createClient, watchMerchantKeys } from '@receipt-service/sdk';
import { KeyLogUsageError, keyLogUsage } from './admin/usage.js';

interface WatchState {
  /** The log's public key, pinned on the first watch: later heads must verify under it. */
  logPublicKey: { kty: string; crv: string; x: string; y: string };
  /** The last signed tree head this watch checked: the next one must extend it. */
  treeHead: string;
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `key-log watch --merchant ID`: every key event under the merchant client since the last watch,
 * checked against the public log with the SDK (the head signed by the pinned log key, consistent
 * with the last head kept, the leaves hashing to it). The state file keeps the pinned key and head.
 */
export async function runKeyLogCommand(
  argv: string[],
  print: (line: string) => void = (line) => console.log(line),
): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      merchant: { type: 'string' },
      url: { type: 'string', default: process.env.RECEIPT_SERVICE_URL ?? 'http://127.0.0.1:3000' },
      state: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const [group, command] = positionals;
  if (group !== 'key-log' || command !== 'watch') throw new KeyLogUsageError(keyLogUsage);
  if (!values.merchant || !uuid.test(values.merchant))
    throw new KeyLogUsageError('key-log watch needs --merchant CLIENT_ID (a UUID)');
  const stateFile = values.state ?? `.key-log-watch-${values.merchant}.json`;
  const client = createClient({ baseUrl: values.url });
  const kept = await readFile(stateFile, 'utf8').then(
    (text) => JSON.parse(text) as WatchState,
    () => undefined,
  );
  let logPublicKey = kept?.logPublicKey;
  if (!logPublicKey) {
    // First watch: the key is pinned from the service once (compare it with the one your operator publishes).
    const { data } = await client.GET('/api/v1/key-log/public-key');
    logPublicKey = data?.data as WatchState['logPublicKey'] | undefined;
    if (!logPublicKey) throw new KeyLogUsageError(`No key log at ${values.url}: is the service running?`);
  }
  const watched = await watchMerchantKeys(client, values.merchant, kept?.treeHead ?? null, { logPublicKey });
  await writeFile(
    stateFile,
    JSON.stringify({ logPublicKey, treeHead: watched.treeHead } satisfies WatchState),
  );
  const result = {
    merchantClientId: values.merchant,
    treeSize: watched.head.treeSize,
    events: watched.events,
  };
  if (values.json) print(JSON.stringify(result));
  else {
    for (const event of watched.events) print(`${event.at}  #${event.index}  ${event.event}  ${event.kid}`);
    print(
      `${watched.events.length} key event(s) since the last watch; the log has ${watched.head.treeSize} leaves.`,
    );
  }
  return result;
}
