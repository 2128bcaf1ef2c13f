/**
 * Runs the gateway test double on its own: `tsx local/gateway-sandbox/main.ts [port]`, then start the
 * service with GATEWAY_SANDBOX_URL set to the printed address. GATEWAY_SANDBOX_DATA_DIR keeps its
 * payments in that folder across restarts.
 */
import { startGatewaySandbox } from './index.js';

const port = Number(process.argv[2] ?? process.env.GATEWAY_SANDBOX_PORT ?? 0);
const dataDir = process.env.GATEWAY_SANDBOX_DATA_DIR;
const sandbox = await startGatewaySandbox({ port, ...(dataDir ? { dataDir } : {}) });
console.log(
  `Gateway sandbox (test double) listening on ${sandbox.url}${dataDir ? `, payments kept in ${dataDir}` : ''}`,
);

const shutdown = () => {
  sandbox.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
