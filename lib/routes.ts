import type { RouteDeclaration } from './contract/route.js';
import { apiDocsRoute } from './routes/api-docs.js';
import { claimReceiptsRoute } from './routes/claim-receipts.js';
import { createPaymentRoute } from './routes/create-payment.js';
import { decryptPaymentRoute } from './routes/decrypt-payment.js';
import { decryptReceiptRoute } from './routes/decrypt-receipt.js';
import { encryptReceiptRoute } from './routes/encrypt-receipt.js';
import { generateKeysRoute } from './routes/generate-keys.js';
import { importKeyRoute } from './routes/import-key.js';
import { listWebhookDeliveriesRoute } from './routes/list-webhook-deliveries.js';
import { retryWebhookDeliveryRoute } from './routes/retry-webhook-delivery.js';
import { getTransactionRoute } from './routes/get-transaction.js';
import { grantAccessRoute } from './routes/grant-access.js';
import { healthRoute } from './routes/health.js';
import { openApiRoute } from './routes/openapi.js';
import { registerRoute } from './routes/register.js';
import { eraseUserRoute } from './routes/erase-user.js';
import { revokeTokenRoute } from './routes/revoke-token.js';
import { rotateUserKeyRoute } from './routes/rotate-user-key.js';
import { storeTransactionRoute } from './routes/store-transaction.js';
import { listUserReceiptsRoute } from './routes/list-user-receipts.js';
import { getReceiptRoute } from './routes/get-receipt.js';
import { getPaymentReceiptRoute } from './routes/get-payment-receipt.js';
import { createWebhookRoute } from './routes/create-webhook.js';
import { listWebhooksRoute } from './routes/list-webhooks.js';
import { deleteWebhookRoute } from './routes/delete-webhook.js';
import { rotateWebhookSecretRoute } from './routes/rotate-webhook-secret.js';

export {
  rateGroupOf,
  type HttpMethod,
  type Role,
  type RouteDeclaration,
  type RouteDefinition,
  type TableAccess,
} from './contract/route.js';

/**
 * The route table. Each declaration (lib/routes/<name>.ts) is read by its handler, the pipeline, the
 * OpenAPI generator, the CDK stack (one Lambda per entry) and the local server. Adding an endpoint is
 * one declaration, one entry here and one handler file exporting `createHandler` and `handler`.
 * Handlers import their own declaration rather than this table, so a bundle carries only its route.
 */
export const routeTable = {
  health: healthRoute,
  'generate-keys': generateKeysRoute,
  'import-key': importKeyRoute,
  register: registerRoute,
  'grant-access': grantAccessRoute,
  'encrypt-receipt': encryptReceiptRoute,
  'decrypt-receipt': decryptReceiptRoute,
  'store-transaction': storeTransactionRoute,
  'get-transaction': getTransactionRoute,
  'create-payment': createPaymentRoute,
  'decrypt-payment': decryptPaymentRoute,
  'rotate-user-key': rotateUserKeyRoute,
  'erase-user': eraseUserRoute,
  'revoke-token': revokeTokenRoute,
  openapi: openApiRoute,
  'claim-receipts': claimReceiptsRoute,
  'list-user-receipts': listUserReceiptsRoute,
  'get-receipt': getReceiptRoute,
  'get-payment-receipt': getPaymentReceiptRoute,
  'create-webhook': createWebhookRoute,
  'list-webhooks': listWebhooksRoute,
  'delete-webhook': deleteWebhookRoute,
  'rotate-webhook-secret': rotateWebhookSecretRoute,
  'list-webhook-deliveries': listWebhookDeliveriesRoute,
  'retry-webhook-delivery': retryWebhookDeliveryRoute,
  'api-docs': apiDocsRoute,
} as const satisfies Record<string, RouteDeclaration>;

export type RouteName = keyof typeof routeTable;

/** Every route, in table order: the document, the stack and the local server iterate this. */
export const routes: readonly RouteDeclaration[] = Object.values(routeTable);

export const findRoute = <N extends RouteName>(name: N): (typeof routeTable)[N] => routeTable[name];

// A table key that is not its route's name would send the stack and the document different names.
const _keysAreNames: { [K in RouteName]: { name: K } } = routeTable;
