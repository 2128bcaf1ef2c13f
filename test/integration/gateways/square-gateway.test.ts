import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { ConflictError, InvalidRequestError } from '../../../lib/kernel/errors.js';
import { GatewayError, PaymentDeclinedError } from '../../../lib/gateways/vocabulary.js';
import type { PaymentGateway } from '../../../lib/gateways/port.js';
import {
  DECLINED_NONCE,
  startGatewaySandbox,
  type GatewaySandbox,
} from '../../../local/gateway-sandbox/index.js';
import {
  attemptsOf,
  clockedGateways,
  NEVER_MS,
  oneKey,
  paymentRequest,
  pointers,
  sandboxGateways,
} from './support.js';

interface WireMoney {
  amount: number;
  currency: string;
}
interface WireOrder {
  id: string;
  state: string;
  metadata: Record<string, string>;
  line_items: {
    name: string;
    quantity: string;
    note?: string;
    base_price_money: WireMoney;
    total_money: WireMoney;
  }[];
  service_charges: { total_money: WireMoney }[];
  total_money: WireMoney;
  total_service_charge_money: WireMoney;
}

describe('SquareGateway (gateway_b) with the real square SDK against the sandbox', () => {
  let sandbox: GatewaySandbox;
  let gateway: PaymentGateway;

  /** What Square stored, read over the wire rather than through the adapter under test. */
  async function wireOrder(orderId: string): Promise<WireOrder> {
    const response = await fetch(`${sandbox.url}/v2/orders/${orderId}`, {
      headers: { Authorization: 'Bearer test' },
    });
    return ((await response.json()) as { order: WireOrder }).order;
  }

  beforeAll(async () => {
    sandbox = await startGatewaySandbox();
    gateway = (await sandboxGateways(sandbox.url)).square;
  });
  afterAll(() => sandbox.stop());
  beforeEach(() => sandbox.reset());

  it('creates an order and a payment, and follows the payment back to the pointers', async () => {
    const request = paymentRequest();
    const created = await gateway.createPayment(request);

    expect(created).toEqual({
      paymentId: expect.any(String),
      clientSecret: null,
      orderId: expect.any(String),
      status: 'COMPLETED',
      state: 'succeeded',
      amount: request.amount,
      currency: 'USD',
      livemode: false,
      // As Square documents them on the payment's card_details.
      references: {
        network: 'visa',
        authorizationCode: expect.stringMatching(/^[A-Z0-9]{6}$/),
        last4: '1111',
        statementDescriptor: 'SQ *RECEIPTS SANDBOX',
        providerIds: { paymentId: created.paymentId },
      },
    });
    // Plain numbers, not the SDK's bigint: results must survive JSON.
    expect(() => JSON.stringify(created)).not.toThrow();
    const retrieved = await gateway.retrievePayment(created.paymentId);
    expect(retrieved).toEqual({
      paymentId: created.paymentId,
      orderId: created.orderId,
      amount: request.amount,
      currency: 'USD',
      status: 'COMPLETED',
      state: 'succeeded',
      pointers: request.pointers,
    });
    expect(() => JSON.stringify(retrieved)).not.toThrow();
  });

  it('builds an order whose total is the lines plus tax, equal to the amount charged', async () => {
    const request = paymentRequest();
    const { orderId } = await gateway.createPayment(request);

    const order = await wireOrder(orderId ?? '');
    expect(order.line_items.map((line) => [line.name, line.quantity, line.base_price_money.amount])).toEqual([
      ['Coffee beans 250 g', '2', 899],
      ['Filter papers', '1', 599],
    ]);
    const linesTotal = order.line_items.reduce((sum, line) => sum + line.total_money.amount, 0);
    expect(linesTotal).toBe(1_798 + 599);
    expect(order.total_service_charge_money.amount).toBe(request.taxAmount);
    expect(order.total_money).toEqual({ amount: linesTotal + request.taxAmount, currency: 'USD' });
    expect(order.total_money.amount).toBe(request.amount);
    expect(order.metadata).toEqual(request.pointers);
    expect(order.state).toBe('COMPLETED');
  });

  it('keeps the order exact when a line total is not quantity times unit price', async () => {
    const request = paymentRequest({
      lines: [{ name: 'Three for ten', quantity: 3, unitPrice: 350, totalPrice: 1_000 }],
      taxAmount: 0,
      amount: 1_000,
    });
    const { orderId } = await gateway.createPayment(request);

    const [line] = (await wireOrder(orderId ?? '')).line_items;
    expect(line).toMatchObject({ quantity: '1', base_price_money: { amount: 1_000 } });
    expect(line?.note).toContain('quantity 3');
    expect((await wireOrder(orderId ?? '')).service_charges).toEqual([]);
  });

  it('rejects lines and tax that do not add up to the amount, before calling the provider', async () => {
    await expect(gateway.createPayment(paymentRequest({ amount: 9_999 }))).rejects.toBeInstanceOf(
      InvalidRequestError,
    );
    expect(sandbox.stats.requests['square.orders.create']).toBe(0);
  });

  it('rejects pointers beyond the order metadata limits before calling the provider', async () => {
    const tooLong = { ...pointers(), transactionId: 't'.repeat(256) };

    await expect(gateway.createPayment(paymentRequest({ pointers: tooLong }))).rejects.toThrow(
      'gateway_b limits',
    );
    expect(sandbox.stats.requests['square.orders.create']).toBe(0);
  });

  it('returns the first order and payment when the same receipt is sent again', async () => {
    const request = paymentRequest();
    const first = await gateway.createPayment(request);
    const second = await gateway.createPayment({ ...request, cardNonce: 'cnon:card-nonce-ok' });

    expect(second).toEqual(first);
    expect(sandbox.stats.ordersCreated).toBe(1);
    expect(sandbox.stats.paymentsCreated.gateway_b).toBe(1);
  });

  it('refuses to reuse a receipt key for different lines', async () => {
    const request = paymentRequest();
    await gateway.createPayment(request);

    const changed = { ...request, taxAmount: 0, amount: request.amount - request.taxAmount };
    await expect(gateway.createPayment(changed)).rejects.toBeInstanceOf(ConflictError);
    expect(sandbox.stats.paymentsCreated.gateway_b).toBe(1);
  });

  it('lets the SDK retry a 500 into success', async () => {
    sandbox.faults.add({ kind: 'status', operation: 'square.payments.create', status: 500, times: 1 });

    await expect(gateway.createPayment(paymentRequest())).resolves.toMatchObject({ status: 'COMPLETED' });
    expect(sandbox.stats.requests['square.payments.create']).toBe(2);
    expect(sandbox.stats.paymentsCreated.gateway_b).toBe(1);
  });

  it('gives up with GatewayError after three attempts when the API keeps failing', async () => {
    sandbox.faults.add({ kind: 'status', operation: 'square.orders.create', status: 500, times: 'always' });

    await expect(gateway.createPayment(paymentRequest())).rejects.toBeInstanceOf(GatewayError);
    expect(sandbox.stats.requests['square.orders.create']).toBe(3);
    expect(sandbox.stats.requests['square.payments.create']).toBe(0);
  });

  it('recovers a payment whose response was lost after it was committed, without charging twice', async () => {
    const impatient = await clockedGateways(sandbox.url);
    sandbox.faults.add({
      kind: 'hang',
      operation: 'square.payments.create',
      when: 'after-commit',
      ms: NEVER_MS,
    });
    const request = paymentRequest();

    // Square's SDK does not retry timeouts, so the caller sees the failure.
    const creating = impatient.square.createPayment(request);
    await impatient.timeOut(sandbox);
    await expect(creating).rejects.toBeInstanceOf(GatewayError);
    expect(sandbox.stats.paymentsCreated.gateway_b).toBe(1);

    // ...and its retry with the same receipt, at the service's own timeout, lands on the same order
    // and payment: one attempt more of each, with the keys of the first.
    const created = await gateway.createPayment(request);
    expect(sandbox.stats.ordersCreated).toBe(1);
    expect(sandbox.stats.paymentsCreated.gateway_b).toBe(1);
    const payments = attemptsOf(sandbox, 'square.payments.create');
    expect(payments.map((attempt) => attempt.fault)).toEqual(['hang', null]);
    oneKey(payments);
    oneKey(attemptsOf(sandbox, 'square.orders.create'));
    expect((await gateway.retrievePayment(created.paymentId))?.pointers).toEqual(request.pointers);
  });

  it('maps a declined card to PaymentDeclinedError', async () => {
    const declined = gateway.createPayment(paymentRequest({ cardNonce: DECLINED_NONCE }));
    await expect(declined).rejects.toBeInstanceOf(PaymentDeclinedError);
    await expect(declined).rejects.toMatchObject({ status: 402, details: { declineCode: 'CARD_DECLINED' } });

    sandbox.faults.add({ kind: 'decline', operation: 'square.payments.create' });
    await expect(gateway.createPayment(paymentRequest())).rejects.toBeInstanceOf(PaymentDeclinedError);
    expect(sandbox.stats.paymentsCreated.gateway_b).toBe(0);
  });

  it('returns null for a payment the provider does not have', async () => {
    await expect(gateway.retrievePayment('NoSuchPayment123')).resolves.toBeNull();
    expect(sandbox.stats.requests['square.payments.get']).toBe(1);
    await expect(gateway.retrievePayment('../orders/x')).resolves.toBeNull();
    expect(sandbox.stats.requests['square.payments.get']).toBe(1);
  });

  it('reports health by reading the configured location', async () => {
    await expect(gateway.checkHealth()).resolves.toBeUndefined();
    expect(sandbox.stats.requests['square.locations.get']).toBe(1);

    sandbox.faults.add({ kind: 'status', operation: 'square.locations.get', status: 503, times: 'always' });
    await expect(gateway.checkHealth()).rejects.toBeInstanceOf(GatewayError);
    expect(sandbox.stats.requests['square.locations.get']).toBe(2);
  });
});
