import type { RouteDeclaration } from '../lib/kernel/route.js';
import { apiDocsRoute } from './platform/api-docs/route.js';
import { claimReceiptsRoute } from './receipts/claim-receipts/route.js';
import { createPaymentRoute } from './payments/create-payment/route.js';
import { decryptPaymentRoute } from './payments/decrypt-payment/route.js';
import { decryptReceiptRoute } from './receipts/decrypt-receipt/route.js';
import { encryptReceiptRoute } from './receipts/encrypt-receipt/route.js';
import { generateKeysRoute } from './onboarding/generate-keys/route.js';
import { importKeyRoute } from './onboarding/import-key/route.js';
import { listWebhookDeliveriesRoute } from './webhooks/list-webhook-deliveries/route.js';
import { retryWebhookDeliveryRoute } from './webhooks/retry-webhook-delivery/route.js';
import { getTransactionRoute } from './transactions/get-transaction/route.js';
import { grantAccessRoute } from './access/grant-access/route.js';
import { healthRoute } from './platform/health/route.js';
import { openApiRoute } from './platform/openapi/route.js';
import { registerRoute } from './onboarding/register/route.js';
import { eraseUserRoute } from './users/erase-user/route.js';
import { revokeTokenRoute } from './access/revoke-token/route.js';
import { rotateUserKeyRoute } from './users/rotate-user-key/route.js';
import { storeTransactionRoute } from './transactions/store-transaction/route.js';
import { listUserReceiptsRoute } from './receipts/list-user-receipts/route.js';
import { getReceiptRoute } from './receipts/get-receipt/route.js';
import { getPaymentReceiptRoute } from './payments/get-payment-receipt/route.js';
import { createWebhookRoute } from './webhooks/create-webhook/route.js';
import { listWebhooksRoute } from './webhooks/list-webhooks/route.js';
import { deleteWebhookRoute } from './webhooks/delete-webhook/route.js';
import { rotateWebhookSecretRoute } from './webhooks/rotate-webhook-secret/route.js';
import { gatewayEventsRoute } from './payments/gateway-events/route.js';
import { createRefundRoute } from './payments/create-refund/route.js';
import { listRefundsRoute } from './payments/list-refunds/route.js';
import { matchReceiptsRoute } from './receipts/match-receipts/route.js';
import { registerSigningKeyRoute } from './merchants/register-signing-key/route.js';
import { listSigningKeysRoute } from './merchants/list-signing-keys/route.js';
import { revokeSigningKeyRoute } from './merchants/revoke-signing-key/route.js';
import { setSigningPolicyRoute } from './merchants/set-signing-policy/route.js';
import { getMerchantKeyRoute } from './merchants/get-merchant-key/route.js';
import { createKeyChallengeRoute } from './merchants/create-key-challenge/route.js';
import { getMerchantJwksRoute } from './merchants/get-merchant-jwks/route.js';
import { getKeyLogPublicKeyRoute } from './key-log/get-key-log-public-key/route.js';
import { getKeyLogTreeHeadRoute } from './key-log/get-key-log-tree-head/route.js';
import { listKeyLogEntriesRoute } from './key-log/list-key-log-entries/route.js';
import { proveKeyLogConsistencyRoute } from './key-log/prove-key-log-consistency/route.js';
import { proveKeyLogInclusionRoute } from './key-log/prove-key-log-inclusion/route.js';

export {
  rateGroupOf,
  type HttpMethod,
  type Role,
  type RouteDeclaration,
  type RouteDefinition,
  type TableAccess,
} from '../lib/kernel/route.js';

/**
 * The route table. Each declaration (functions/<feature>/<endpoint>/route.ts) is read by its handler,
 * the pipeline, the OpenAPI generator, the CDK stack (one Lambda per entry) and the local server.
 * Adding an endpoint is one folder (route.ts and handler.ts, exporting `createHandler` and `handler`)
 * and one entry here (docs/ARCHITECTURE.md).
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
  'gateway-events': gatewayEventsRoute,
  'create-refund': createRefundRoute,
  'list-refunds': listRefundsRoute,
  'match-receipts': matchReceiptsRoute,
  'register-signing-key': registerSigningKeyRoute,
  'list-signing-keys': listSigningKeysRoute,
  'revoke-signing-key': revokeSigningKeyRoute,
  'set-signing-policy': setSigningPolicyRoute,
  'get-merchant-key': getMerchantKeyRoute,
  'create-key-challenge': createKeyChallengeRoute,
  'get-merchant-jwks': getMerchantJwksRoute,
  'get-key-log-tree-head': getKeyLogTreeHeadRoute,
  'get-key-log-public-key': getKeyLogPublicKeyRoute,
  'list-key-log-entries': listKeyLogEntriesRoute,
  'prove-key-log-inclusion': proveKeyLogInclusionRoute,
  'prove-key-log-consistency': proveKeyLogConsistencyRoute,
} as const satisfies Record<string, RouteDeclaration>;

export type RouteName = keyof typeof routeTable;

/** Every route, in table order: the document, the stack and the local server iterate this. */
export const routes: readonly RouteDeclaration[] = Object.values(routeTable);

export const findRoute = <N extends RouteName>(name: N): (typeof routeTable)[N] => routeTable[name];

// A table key that is not its route's name would send the stack and the document different names.
const _keysAreNames: { [K in RouteName]: { name: K } } = routeTable;
