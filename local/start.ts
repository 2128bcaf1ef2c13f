import { writeFile, access } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensurePrivateDir } from './private-files.js';
import { startLocalStack } from './stack.js';
import { DEFAULT_DISPATCHER_INTERVAL_MS, DEFAULT_SWEEP_INTERVAL_MS } from './stream-poller.js';

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

const portInUse = () => {
  console.error(`Port ${port} is in use: stop the other process or set PORT=… (PORT=0 picks a free port)`);
  process.exit(1);
};
// Checked before DynamoDB Local starts, so a second `npm start` says so at once, not after Java's start-up.
const taken = await new Promise<boolean>((resolve) => {
  const probe = createServer();
  probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
  probe.listen(port, values.host, () => probe.close(() => resolve(false)));
});
if (taken) portInUse();

const stack = await startLocalStack({
  host: values.host,
  port,
  dataDir,
  inMemory: values['in-memory'],
}).catch((error: unknown) => {
  // Taken since the check above: still one line that says what to do, not a stack trace.
  if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') portInUse();
  throw error;
});
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
console.log(`  reference:  ${stack.url}/api/v1/docs`);
console.log(`  console:    ${stack.url}/console (the flow in a browser; paste API keys)`);
console.log(
  `  DynamoDB:   ${stack.dynamoDbEndpoint} (${values['in-memory'] ? 'in memory' : `data in ${dataDir}`})`,
);
console.log(
  `  gateways:   ${stack.sandbox ? `local sandbox at ${stack.sandbox.url} (test double)` : 'real provider test modes'}`,
);
console.log(
  `  events:     ${stack.url}/api/v1/gateways/{gateway}/events${stack.sandbox ? ' (the sandbox posts its signed events there)' : ''}`,
);
console.log(`  escrow key: ${stack.deps.escrow.keyId}`);
console.log(
  `  webhooks:   receipts stream read every ${DEFAULT_DISPATCHER_INTERVAL_MS} ms and due retries swept every ${DEFAULT_SWEEP_INTERVAL_MS} ms, by the Lambdas' own code`,
);
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
