/**
 * lib/'s floors, from the ground up: one list read by the lint zones (eslint.config.js), the
 * layout table (scripts/layout.ts, in docs/ARCHITECTURE.md) and docs/ARCHITECTURE.md's picture. A folder imports its own floor's
 * files and every floor below; on the use-case floor a feature imports only the features it names.
 */
/**
 * Below lib/'s floors: the workspace packages that the service and a device share, which lib/ (every
 * floor of it) and the SDK import by package name. A package imports only its own files and the
 * packages it declares, nothing of the repository around it (eslint.config.js, packageZones).
 */
/** @type {Record<string, string>} */
export const packageFloor = {
  'receipt-core':
    'the receipt rules the service and a device share: the DigitalReceipt mapping, refund receipts, canonical JSON, merchant signatures',
};

/** @type {Record<string, string>[]} */
export const floors = [
  {
    kernel:
      'route contract (`defineRoute`, roles), errors, configuration, clock, logger, tables, tiers, telemetry port, field schemas',
  },
  {
    crypto: 'the envelope (AES-256-GCM, RSA-OAEP-256, ECDH-ES+A256KW), keys, card tags, the escrow key port',
    gateways: 'the payment-gateway port and its Stripe and Square adapters',
  },
  { db: 'DynamoDB repositories, one per table (document client injected)' },
  { 'api-keys': 'API key format and verification, the edge authorizer' },
  { app: 'the dependency container: what a handler is given (`CoreDeps`, `AppDeps`)' },
  {
    access: 'access tokens: grant and revoke',
    onboarding: 'key pairs, imported device keys, registration',
    transactions: 'transaction mappings',
    webhooks: 'webhook registration, events, signed delivery with back-off',
    platform: 'health',
    receipts: 'encrypt, decrypt, claim, the inbox and envelope fetch, receipt schemas',
    users: 'key rotation and erasure',
    payments: 'payment creation with its receipt, decrypt by payment, idempotency',
    merchants: "merchant signing keys, the signing policy, and the check of a request's Receipt-Signature",
    'key-log':
      'the transparency log of merchant key events: the RFC 9162 Merkle tree, its proofs and signed tree heads',
  },
  {
    http: 'the Middy pipeline, one file per middleware: headers, API key + role + rate limit, body limit, validation, error envelope',
    openapi: 'the OpenAPI document, built from the route declarations',
  },
  { wiring: 'the AWS adapters and the cold-start wiring of a Lambda (`awsHandler`)' },
];

/** On the use-case floor: which features each may import (none by default). */
/** @type {Record<string, string[]>} */
export const featureImports = {
  receipts: ['transactions', 'merchants'],
  users: ['access', 'onboarding'],
  payments: ['receipts', 'transactions', 'merchants'],
  merchants: ['webhooks', 'key-log'],
};
