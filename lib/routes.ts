import type { TableKey } from './tables.js';
import type { RateGroup } from './tiers.js';

/**
 * The route table: read by the CDK stack (one Lambda per entry) and by the local server. Adding an
 * endpoint is one entry here plus one handler file exporting `createHandler` and `handler`.
 */
export type Role = 'merchant' | 'issuer';
export type HttpMethod = 'GET' | 'POST';
export type TableAccess = 'read' | 'write' | 'readWrite';

export interface RouteDefinition {
  /** Function name; also the folder under functions/. */
  name: string;
  method: HttpMethod;
  /** API Gateway style path; `{param}` segments are path parameters. */
  path: string;
  /** Handler module, relative to the project root. */
  entry: string;
  /** False only for the public health and contract endpoints. */
  apiKeyRequired: boolean;
  roles: Role[];
  /** Tables the function touches and how: the CDK stack grants exactly this. */
  tables: Partial<Record<TableKey, TableAccess>>;
  /** Escrow key use: wrapping needs only the public key, unwrapping needs kms:Decrypt. */
  escrow?: 'wrap' | 'wrapAndUnwrap';
  /** Reaches the payment gateways (reads their credentials). */
  gateways?: boolean;
  /** Whose per-minute budget a keyed call spends (lib/tiers.ts); read it with `rateGroupOf`. */
  rateGroup?: RateGroup;
  memoryMb?: number;
  timeoutSeconds?: number;
}

export const rateGroupOf = (route: RouteDefinition): RateGroup => route.rateGroup ?? 'general';

// Every authenticated call reads its key and counts against its limit; every call may write audit.
const platform = { apiKeys: 'read', rateLimits: 'readWrite', audit: 'write' } as const;

export const routes: RouteDefinition[] = [
  {
    name: 'health',
    method: 'GET',
    path: '/api/v1/health',
    entry: 'functions/health/handler.ts',
    apiKeyRequired: false,
    roles: [],
    tables: { rateLimits: 'readWrite', apiKeys: 'read' },
    escrow: 'wrap',
    gateways: true,
  },
  {
    name: 'generate-keys',
    method: 'POST',
    path: '/api/v1/onboarding/generate-keys',
    entry: 'functions/generate-keys/handler.ts',
    apiKeyRequired: true,
    roles: ['issuer'],
    tables: { ...platform, keyPairs: 'write' },
    rateGroup: 'keyGeneration',
    memoryMb: 1024,
  },
  {
    name: 'register',
    method: 'POST',
    path: '/api/v1/onboarding/register',
    entry: 'functions/register/handler.ts',
    apiKeyRequired: true,
    roles: ['issuer'],
    tables: { ...platform, keyPairs: 'readWrite', users: 'readWrite', receipts: 'readWrite' },
    escrow: 'wrapAndUnwrap',
  },
  {
    name: 'grant-access',
    method: 'POST',
    path: '/api/v1/keys/grant-access',
    entry: 'functions/grant-access/handler.ts',
    apiKeyRequired: true,
    roles: ['issuer'],
    tables: { ...platform, users: 'read', accessTokens: 'readWrite' },
  },
  {
    name: 'encrypt-receipt',
    method: 'POST',
    path: '/api/v1/receipts/encrypt',
    entry: 'functions/encrypt-receipt/handler.ts',
    apiKeyRequired: true,
    roles: ['merchant'],
    tables: { ...platform, users: 'read', keyPairs: 'read', receipts: 'write' },
    escrow: 'wrap',
  },
  {
    name: 'decrypt-receipt',
    method: 'POST',
    path: '/api/v1/receipts/decrypt',
    entry: 'functions/decrypt-receipt/handler.ts',
    apiKeyRequired: true,
    roles: ['issuer'],
    tables: { ...platform, users: 'read', keyPairs: 'read', accessTokens: 'read' },
  },
  {
    name: 'store-transaction',
    method: 'POST',
    path: '/api/v1/transactions',
    entry: 'functions/store-transaction/handler.ts',
    apiKeyRequired: true,
    roles: ['merchant'],
    tables: { ...platform, transactions: 'readWrite', receipts: 'readWrite' },
  },
  {
    name: 'get-transaction',
    method: 'GET',
    path: '/api/v1/transactions/{transactionId}',
    entry: 'functions/get-transaction/handler.ts',
    apiKeyRequired: true,
    roles: ['merchant', 'issuer'],
    tables: { ...platform, transactions: 'read', receipts: 'read', users: 'read' },
  },
  {
    name: 'create-payment',
    method: 'POST',
    path: '/api/v1/payments/{gateway}/create',
    entry: 'functions/create-payment/handler.ts',
    apiKeyRequired: true,
    roles: ['merchant'],
    tables: {
      ...platform,
      users: 'read',
      keyPairs: 'read',
      receipts: 'readWrite',
      transactions: 'readWrite',
      idempotency: 'readWrite',
    },
    escrow: 'wrap',
    gateways: true,
    rateGroup: 'payments',
    timeoutSeconds: 29,
  },
  {
    name: 'decrypt-payment',
    method: 'POST',
    path: '/api/v1/payments/decrypt',
    entry: 'functions/decrypt-payment/handler.ts',
    apiKeyRequired: true,
    roles: ['issuer'],
    tables: {
      ...platform,
      users: 'read',
      keyPairs: 'read',
      accessTokens: 'read',
      receipts: 'read',
      transactions: 'read',
    },
    gateways: true,
    rateGroup: 'payments',
    timeoutSeconds: 29,
  },
  {
    name: 'openapi',
    method: 'GET',
    path: '/api/v1/openapi.json',
    entry: 'functions/openapi/handler.ts',
    apiKeyRequired: false,
    roles: [],
    tables: { rateLimits: 'readWrite', apiKeys: 'read' },
  },
];

export const findRoute = (name: string): RouteDefinition => {
  const route = routes.find((candidate) => candidate.name === name);
  if (!route) throw new Error(`No route named ${name} in lib/routes.ts`);
  return route;
};
