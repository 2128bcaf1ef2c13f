/**
 * Runs the gateway test double on its own: `tsx local/gateway-sandbox/main.ts [port]`, then start the
 * service with GATEWAY_SANDBOX_URL set to the printed address. GATEWAY_SANDBOX_DATA_DIR keeps its
 * payments in that folder across restarts, and its webhook secrets in gateway-webhook-secrets.json
 * there (give the service the same: STRIPE_WEBHOOK_SECRET, SQUARE_WEBHOOK_SIGNATURE_KEY).
 * GATEWAY_SANDBOX_SERVICE_URL is where the service listens: the providers' events are posted there.
 */
import { loadOrCreateWebhookSecrets } from '../gateway-webhook-secrets.js';
import { startGatewaySandbox } from './index.js';

const port = Number(process.argv[2] ?? process.env.GATEWAY_SANDBOX_PORT ?? 0);
const dataDir = process.env.GATEWAY_SANDBOX_DATA_DIR;
const serviceUrl = process.env.GATEWAY_SANDBOX_SERVICE_URL;
const sandbox = await startGatewaySandbox({
  port,
  ...(dataDir ? { dataDir, webhookSecrets: await loadOrCreateWebhookSecrets(dataDir) } : {}),
});
if (serviceUrl) sandbox.deliverEventsTo(serviceUrl);
console.log(
  `Gateway sandbox (test double) listening on ${sandbox.url}${dataDir ? `, payments kept in ${dataDir}` : ''}` +
    (serviceUrl ? `, events posted to ${serviceUrl}` : ', no events sent (set GATEWAY_SANDBOX_SERVICE_URL)'),
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
