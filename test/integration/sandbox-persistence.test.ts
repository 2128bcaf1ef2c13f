import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, jest } from '@jest/globals';
import type { PaymentGateway } from '../../lib/gateways/port.js';
import {
  SANDBOX_JOURNAL_FILE,
  startGatewaySandbox,
  type GatewaySandbox,
} from '../../local/gateway-sandbox/index.js';
import { flattenedReceipt } from '../support/fixtures.js';
import { grantToken, onboardUser } from '../support/flow.js';
import { startTestStack, type TestStack } from '../support/stack.js';
import { paymentRequest, sandboxGateways } from './gateways/support.js';

interface Data<T> {
  success: true;
  data: T;
}

describe('gateway sandbox payments across a restart (real stripe and square SDKs)', () => {
  const running: GatewaySandbox[] = [];
  const folders: string[] = [];

  const start = async (dataDir?: string) => {
    const sandbox = await startGatewaySandbox(dataDir ? { dataDir } : {});
    running.push(sandbox);
    return { sandbox, ...(await sandboxGateways(sandbox.url)) };
  };
  const stop = async (sandbox: GatewaySandbox) => {
    running.splice(running.indexOf(sandbox), 1);
    await sandbox.stop();
  };
  const folder = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-persist-'));
    folders.push(dir);
    return dir;
  };

  afterEach(async () => {
    await Promise.all(running.splice(0).map((sandbox) => sandbox.stop()));
  });
  afterAll(async () => {
    await Promise.all(folders.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  const both = (gateways: { stripe: PaymentGateway; square: PaymentGateway }) =>
    [
      ['gateway_a', gateways.stripe],
      ['gateway_b', gateways.square],
    ] as const;

  it('keeps payments, their receipt pointers and idempotent replays in the data folder', async () => {
    const dataDir = await folder();
    const first = await start(dataDir);
    const made = await Promise.all(
      both(first).map(async ([kind, gateway]) => {
        const request = paymentRequest();
        return { kind, request, created: await gateway.createPayment(request) };
      }),
    );
    await stop(first.sandbox);

    const second = await start(dataDir);
    expect(second.sandbox.url).not.toBe(first.sandbox.url);
    const gateways = Object.fromEntries(both(second));
    for (const { kind, request, created } of made) {
      const gateway = gateways[kind]!;
      expect(await gateway.retrievePayment(created.paymentId)).toMatchObject({
        paymentId: created.paymentId,
        amount: request.amount,
        pointers: request.pointers,
      });
      // A retry of a request made before the restart finds its payment instead of charging again.
      expect(await gateway.createPayment(request)).toEqual(created);
    }
    expect(second.sandbox.stats.paymentsCreated).toEqual({ gateway_a: 0, gateway_b: 0 });
  });

  it('skips a line torn by a crash and keeps appending after it', async () => {
    const dataDir = await folder();
    const first = await start(dataDir);
    const request = paymentRequest();
    const created = await first.stripe.createPayment(request);
    await stop(first.sandbox);
    await appendFile(join(dataDir, SANDBOX_JOURNAL_FILE), '{"store":"stripe.paymentIntents","key":"pi_');
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);

    const second = await start(dataDir);
    expect(warn).toHaveBeenCalledWith('gateway sandbox: skipped 1 unreadable line(s) of its journal');
    const later = await second.stripe.createPayment(paymentRequest());
    await stop(second.sandbox);

    const third = await start(dataDir);
    expect((await third.stripe.retrievePayment(created.paymentId))?.pointers).toEqual(request.pointers);
    expect(await third.stripe.retrievePayment(later.paymentId)).not.toBeNull();
    warn.mockRestore();
    const lines = (await readFile(join(dataDir, SANDBOX_JOURNAL_FILE), 'utf8')).trimEnd().split('\n');
    expect(lines.filter((line) => !line.endsWith('}'))).toHaveLength(1);
  });

  it('forgets its payments when started without a data folder', async () => {
    const first = await start();
    const created = await first.stripe.createPayment(paymentRequest());
    expect(await first.stripe.retrievePayment(created.paymentId)).not.toBeNull();
    await stop(first.sandbox);
    const second = await start();
    expect(await second.stripe.retrievePayment(created.paymentId)).toBeNull();
  });
});

describe('the local stack with a data folder', () => {
  let dataDir: string;
  let stack: TestStack | undefined;
  const tablePrefix = `persist${Date.now().toString(36)}-`;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'stack-persist-'));
  });
  afterAll(async () => {
    await stack?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('decrypts by payment id, after a restart, a receipt paid for before it', async () => {
    const open = () => startTestStack({ inMemory: false, dataDir, tablePrefix, logLevel: 'WARN' });
    stack = await open();
    const merchant = await stack.apiKey(['merchant']);
    const issuer = await stack.apiKey(['issuer']);
    const user = await onboardUser(stack, issuer.apiKey);
    const payments: { gateway: string; paymentId: string }[] = [];
    for (const gateway of ['gateway_a', 'gateway_b']) {
      const body = flattenedReceipt({ recipientHashedPan: user.hashedPan, merchantName: 'Before restart' });
      const created = await stack.request<Data<{ paymentId: string }>>(
        'POST',
        `/api/v1/payments/${gateway}/create`,
        {
          apiKey: merchant.apiKey,
          body: gateway === 'gateway_a' ? { ...body, amount: body.totalAmount } : body,
        },
      );
      expect(created.status).toBe(200);
      payments.push({ gateway, paymentId: created.json.data.paymentId });
    }
    await stack.close();
    stack = undefined;

    stack = await open();
    for (const payment of payments) {
      const decrypted = await stack.request<Data<{ merchant: { name: string } }>>(
        'POST',
        '/api/v1/payments/decrypt',
        {
          apiKey: issuer.apiKey,
          body: {
            ...payment,
            accessTokenId: await grantToken(stack, issuer.apiKey, user),
            privateKey: user.privateKey,
          },
        },
      );
      expect({ gateway: payment.gateway, status: decrypted.status }).toEqual({
        gateway: payment.gateway,
        status: 200,
      });
      expect(decrypted.json.data.merchant.name).toBe('Before restart');
    }
  }, 60_000);
});
