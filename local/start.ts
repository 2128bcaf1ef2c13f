import { writeFile, access } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensurePrivateDir } from './private-files.js';
import { startLocalStack } from './stack.js';

/** `npm start`: the whole service on http://127.0.0.1:3000 with no cloud account. */
const { values } = parseArgs({
  options: {
    'in-memory': { type: 'boolean', default: false },
    host: { type: 'string', default: '127.0.0.1' },
  },
  allowPositionals: false,
});

const dataDir = process.env.LOCAL_DATA_DIR ?? join(process.cwd(), '.local-data');
const stateFile = join(dataDir, 'stack.json');
const firstStart = await access(stateFile).then(
  () => false,
  () => true,
);
const port = Number(process.env.PORT ?? 3000);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`PORT must be a port number, got ${process.env.PORT}`);
  process.exit(2);
}

const stack = await startLocalStack({ host: values.host, port, dataDir, inMemory: values['in-memory'] });
await ensurePrivateDir(dataDir);
// The admin CLI finds the running stack's database through this file.
await writeFile(
  stateFile,
  JSON.stringify(
    {
      url: stack.url,
      dynamoDbEndpoint: stack.dynamoDbEndpoint,
      tablePrefix: 'local-',
      sandboxUrl: stack.sandbox?.url ?? null,
      inMemory: values['in-memory'],
      pid: process.pid,
    },
    null,
    2,
  ),
);

console.log(`Receipt service listening on ${stack.url}`);
console.log(`  health:     curl ${stack.url}/api/v1/health`);
console.log(
  `  DynamoDB:   ${stack.dynamoDbEndpoint} (${values['in-memory'] ? 'in memory' : `data in ${dataDir}`})`,
);
console.log(
  `  gateways:   ${stack.sandbox ? `local sandbox at ${stack.sandbox.url} (test double)` : 'real provider test modes'}`,
);
console.log(`  escrow key: ${stack.deps.escrow.keyId}`);
if (firstStart || values['in-memory']) {
  console.log('\nCreate API keys in another terminal (each key is printed once):');
  console.log('  npm run admin -- api-keys create --name "Demo merchant" --roles merchant --tier standard');
  console.log('  npm run admin -- api-keys create --name "Demo issuer" --roles issuer --tier standard');
}
console.log('\nCtrl-C stops everything.');

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping...`);
  await stack.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
