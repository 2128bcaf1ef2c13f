import { randomUUID } from 'node:crypto';
import type { CreatePaymentRequest, PaymentGateway, ReceiptPointers } from '../../../lib/gateways/port.js';
import { createGatewayRegistry, type GatewayConfig } from '../../../lib/gateways/registry.js';
import { patience } from '../../support/processes.js';

/**
 * Short enough that hang faults (10 s) trip the client timeout quickly, long enough for a loaded CI
 * box: half a second on an idle machine, stretched with the load, never past 3 s.
 */
export const TEST_TIMEOUT_MS = Math.min(patience(500), 3_000);

export function sandboxConfig(baseUrl: string, overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  return {
    gateway_a: { mode: 'sandbox', baseUrl },
    gateway_b: { mode: 'sandbox', baseUrl, locationId: 'LTEST' },
    timeoutMs: TEST_TIMEOUT_MS,
    maxAttempts: 3,
    ...overrides,
  };
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
