import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SquareClient } from 'square';
import { InvalidRequestError } from '../../../lib/kernel/errors.js';
import { SquareGateway } from '../../../lib/gateways/square.js';
import { startGatewaySandbox, type GatewaySandbox } from '../../../local/gateway-sandbox/index.js';
import { paymentRequest } from './support.js';

/**
 * The adapter as the registry builds it for real credentials (no test-nonce fallback), talking to the
 * local sandbox only so that the test needs no Square account.
 */
describe('SquareGateway with real credentials', () => {
  let sandbox: GatewaySandbox;
  let gateway: SquareGateway;

  beforeAll(async () => {
    sandbox = await startGatewaySandbox();
    gateway = new SquareGateway(
      new SquareClient({ token: 'EAAA-real-looking-token', baseUrl: sandbox.url, maxRetries: 0 }),
      'LREAL',
    );
  });
  afterAll(() => sandbox.stop());

  it('refuses a payment without cardNonce, naming the field, before anything reaches Square', async () => {
    sandbox.reset();
    const refused = await gateway.createPayment(paymentRequest()).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect(refused).toMatchObject({
      status: 400,
      details: { fields: [{ field: 'cardNonce', message: 'is required for gateway_b' }] },
    });
    expect(sandbox.stats.ordersCreated).toBe(0);
    expect(sandbox.stats.requests['square.payments.create']).toBe(0);
  });

  it('charges the nonce the point of sale sent', async () => {
    const created = await gateway.createPayment(paymentRequest({ cardNonce: 'cnon:card-nonce-ok' }));
    expect(created.status).toBe('COMPLETED');
  });

  it('falls back to the test nonce only when built for the sandbox', async () => {
    const sandboxGateway = new SquareGateway(
      new SquareClient({ token: 'local-sandbox-token', baseUrl: sandbox.url, maxRetries: 0 }),
      'LSANDBOX',
      { testNonceFallback: true },
    );
    expect((await sandboxGateway.createPayment(paymentRequest())).status).toBe('COMPLETED');
  });
});
