import { randomUUID } from 'node:crypto';
import { ManualClock } from '../../../lib/kernel/clock.js';
import type { CreatePaymentRequest, PaymentGateway, ReceiptPointers } from '../../../lib/gateways/port.js';
import {
  createGatewayRegistry,
  gatewayConfigSchema,
  type GatewayConfig,
} from '../../../lib/gateways/registry.js';
import type {
  GatewaySandbox,
  SandboxAttempt,
  SandboxOperation,
} from '../../../local/gateway-sandbox/index.js';

/**
 * The timeout the service runs with (GATEWAY_TIMEOUT_MS unset). No answer of the in-process sandbox
 * comes near it however loaded the machine, so a test that counts attempts counts the retries the
 * code makes for the faults the test armed, never one made because the machine was slow.
 */
export const SERVICE_TIMEOUT_MS = gatewayConfigSchema.parse({}).GATEWAY_TIMEOUT_MS;

/** A held response that outlives any test: the client's timeout or the sandbox's stop ends it. */
export const NEVER_MS = 600_000;

/**
 * Gateways whose calls time out on `clock` (lib/gateways/stripe-client.ts, timed-fetch.ts), for the tests of a response
 * that never comes: `timeOut` waits until the sandbox holds a call, then moves the clock past the
 * timeout. Nothing else times out, however loaded the machine, so those tests count attempts exactly.
 */
export async function clockedGateways(baseUrl: string, overrides: Partial<GatewayConfig> = {}) {
  const clock = new ManualClock();
  const config = sandboxConfig(baseUrl, overrides);
  const registry = createGatewayRegistry(config, { timeouts: clock });
  return {
    stripe: await registry.get('gateway_a'),
    square: await registry.get('gateway_b'),
    async timeOut(sandbox: GatewaySandbox, held = 1): Promise<void> {
      await sandbox.held(held);
      clock.advance(config.timeoutMs);
    },
  };
}

export function sandboxConfig(baseUrl: string, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  return {
    gateway_a: { mode: 'sandbox', baseUrl },
    gateway_b: { mode: 'sandbox', baseUrl, locationId: 'LTEST' },
    timeoutMs: SERVICE_TIMEOUT_MS,
    maxAttempts: 3,
    ...overrides,
  };
}

/** The sandbox's journal of one operation's attempts, in order. */
export const attemptsOf = (sandbox: GatewaySandbox, operation: SandboxOperation): SandboxAttempt[] =>
  sandbox.attempts.filter((attempt) => attempt.operation === operation);

/** The one idempotency key all these attempts carried; fails when they carried none or several. */
export function oneKey(attempts: SandboxAttempt[]): string {
  const keys = [...new Set(attempts.map((attempt) => attempt.idempotencyKey))];
  const [key] = keys;
  if (attempts.length === 0 || keys.length !== 1 || typeof key !== 'string') {
    throw new Error(
      `expected one idempotency key over ${attempts.length} attempt(s), got ${JSON.stringify(keys)}`,
    );
  }
  return key;
}
export async function sandboxGateways(
  baseUrl: string,
  overrides: Partial<GatewayConfig> = {},
): Promise<{ stripe: PaymentGateway; square: PaymentGateway }> {
  const registry = createGatewayRegistry(sandboxConfig(baseUrl, overrides));
  return { stripe: await registry.get('gateway_a'), square: await registry.get('gateway_b') };
}

export function pointers(): ReceiptPointers {
  return { receiptId: randomUUID(), transactionId: randomUUID(), merchantId: randomUUID() };
}

/** A receipt of two lines plus tax; amount is what the lines and tax add up to. */
export function paymentRequest(overrides: Partial<CreatePaymentRequest> = {}): CreatePaymentRequest {
  const receipt = pointers();
  return {
    idempotencyKey: receipt.receiptId,
    amount: 2_587,
    currency: 'USD',
    pointers: receipt,
    lines: [
      { name: 'Coffee beans 250 g', quantity: 2, unitPrice: 899, totalPrice: 1_798 },
      { name: 'Filter papers', quantity: 1, unitPrice: 599, totalPrice: 599 },
    ],
    taxAmount: 190,
    ...overrides,
  };
}
