import { bearerToken, canonicalJson, IdempotencyStore, randomAuthorizationCode, randomId } from './api.js';
import type { ApiRequest, ApiResponse, DashboardRefunds, ProviderApi, SandboxContext } from './api.js';
import type { Store } from './journal.js';

/**
 * The slice of Square's v2 wire API that lib/gateways/square.ts uses: ad hoc orders with fixed-amount
 * service charges and fixed-amount order-scoped discounts, card payments against them, and location
 * reads. Totals are computed as Square does for these inputs; anything whose arithmetic is not
 * implemented here (taxes, percentage discounts or charges, catalog items) is refused rather than
 * mis-totalled.
 */

export const APPROVED_NONCE = 'cnon:card-nonce-ok';
export const DECLINED_NONCE = 'cnon:card-nonce-declined';

interface Money {
  amount: number;
  currency: string;
}
type Json = Record<string, unknown>;

const squareError = (status: number, category: string, code: string, detail: string, field?: string) => ({
  status,
  body: { errors: [{ category, code, detail, ...(field ? { field } : {}) }] },
});
const invalid = (code: string, detail: string, field?: string): ApiResponse =>
  squareError(400, 'INVALID_REQUEST_ERROR', code, detail, field);

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function readMoney(value: unknown): Money | null {
  if (!isObject(value) || !Number.isSafeInteger(value.amount) || typeof value.currency !== 'string') {
    return null;
  }
  return (value.amount as number) >= 0 ? { amount: value.amount as number, currency: value.currency } : null;
}

function checkMetadata(metadata: unknown): ApiResponse | null {
  if (metadata === undefined || metadata === null) return null;
  if (!isObject(metadata)) return invalid('EXPECTED_MAP', 'metadata must be a map', 'order.metadata');
  const entries = Object.entries(metadata);
  if (entries.length > 10) return invalid('INVALID_VALUE', 'At most 10 metadata entries', 'order.metadata');
  for (const [key, value] of entries) {
    if (key.length > 60) {
      return invalid('MAP_KEY_LENGTH_TOO_LONG', `Key ${key} is too long`, 'order.metadata');
    }
    if (!/^[A-Za-z0-9_-]+$/.test(key)) {
      return invalid('INVALID_VALUE', `Key ${key} is invalid`, 'order.metadata');
    }
    if (typeof value !== 'string' || value.length > 255) {
      return invalid('VALUE_TOO_LONG', `Value of ${key} must be a string of at most 255`, 'order.metadata');
    }
  }
  return null;
}

/** What Square's `statement_description` gives for the sandbox's seller. */
export const SQUARE_STATEMENT_DESCRIPTION = 'SQ *RECEIPTS SANDBOX';

export function squareApi(context: SandboxContext): ProviderApi & DashboardRefunds {
  const orders = context.journal.store<Json>('square.orders');
  const payments = context.journal.store<Json>('square.payments');
  const refunds = context.journal.store<Json>('square.refunds');
  const idempotency = new IdempotencyStore(context.journal.store('square.idempotency'));
  const now = () => context.clock.now().toISOString();

  /** Orders may omit the key; payments must send one (at most 45 characters). */
  function idempotent(
    request: ApiRequest,
    key: { max: number; required: boolean },
    execute: (body: Json) => ApiResponse,
  ): ApiResponse {
    let body: unknown;
    try {
      body = JSON.parse(request.body);
    } catch {
      body = undefined;
    }
    if (!isObject(body)) return invalid('INVALID_CONTENT_TYPE', 'Body must be a JSON object');
    const value = body.idempotency_key;
    if (value === undefined && !key.required) return execute(body);
    if (typeof value !== 'string' || value.length === 0) {
      return invalid('MISSING_REQUIRED_PARAMETER', 'idempotency_key is required', 'idempotency_key');
    }
    if (value.length > key.max) {
      return invalid('VALUE_TOO_LONG', `At most ${key.max} characters`, 'idempotency_key');
    }
    const mismatch = () =>
      invalid('IDEMPOTENCY_KEY_REUSED', 'The idempotency key was used with another request');
    return idempotency.run(value, canonicalJson(body), mismatch, () => execute(body));
  }

  function createOrder(body: Json): ApiResponse {
    const order = body.order;
    if (!isObject(order)) return invalid('MISSING_REQUIRED_PARAMETER', 'order is required', 'order');
    if (typeof order.location_id !== 'string') {
      return invalid('MISSING_REQUIRED_PARAMETER', 'location', 'order.location_id');
    }
    for (const unsupported of ['taxes', 'fulfillments']) {
      if (list(order[unsupported]).length > 0) {
        return invalid(
          'BAD_REQUEST',
          `The gateway sandbox does not compute order ${unsupported}`,
          `order.${unsupported}`,
        );
      }
    }
    const metadataProblem = checkMetadata(order.metadata);
    if (metadataProblem) return metadataProblem;
    const currencies = new Set<string>();
    const lineItems: Json[] = [];
    for (const [index, line] of list(order.line_items).entries()) {
      const field = `order.line_items[${index}]`;
      const base = isObject(line) ? readMoney(line.base_price_money) : null;
      if (!isObject(line) || typeof line.name !== 'string' || line.name.length === 0 || !base) {
        return invalid('INVALID_VALUE', 'Ad hoc line items need name and base_price_money', field);
      }
      if (line.catalog_object_id) return invalid('BAD_REQUEST', 'Catalog items are not simulated', field);
      const quantity = typeof line.quantity === 'string' ? line.quantity : '';
      if (!/^\d{1,6}(\.\d{1,5})?$/.test(quantity) || Number(quantity) <= 0) {
        return invalid('INVALID_VALUE', 'quantity must be a positive decimal string', `${field}.quantity`);
      }
      currencies.add(base.currency);
      // Square rounds the extended price half up to the minor unit.
      const gross = { amount: Math.round(Number(quantity) * base.amount), currency: base.currency };
      const zero = { amount: 0, currency: base.currency };
      lineItems.push({
        ...line,
        uid: randomId(22),
        item_type: 'ITEM',
        variation_total_price_money: gross,
        gross_sales_money: gross,
        total_tax_money: zero,
        total_discount_money: zero,
        total_service_charge_money: zero,
        total_money: gross,
      });
    }
    if (lineItems.length === 0) {
      return invalid('MISSING_REQUIRED_PARAMETER', 'line items', 'order.line_items');
    }
    const discounts: Json[] = [];
    for (const [index, discount] of list(order.discounts).entries()) {
      const field = `order.discounts[${index}]`;
      const amount = isObject(discount) ? readMoney(discount.amount_money) : null;
      if (
        !isObject(discount) ||
        typeof discount.name !== 'string' ||
        !amount ||
        discount.type !== 'FIXED_AMOUNT' ||
        discount.scope !== 'ORDER' ||
        discount.percentage
      ) {
        return invalid(
          'BAD_REQUEST',
          'The gateway sandbox supports FIXED_AMOUNT, ORDER-scoped discounts',
          field,
        );
      }
      currencies.add(amount.currency);
      discounts.push({ ...discount, uid: randomId(22), applied_money: amount });
    }
    // Square spreads an order-scoped fixed discount over the lines in proportion to their price.
    const discountTotal = discounts.reduce(
      (total, discount) => total + (discount.applied_money as Money).amount,
      0,
    );
    const grossTotal = lineItems.reduce((total, line) => total + (line.gross_sales_money as Money).amount, 0);
    if (discountTotal > grossTotal) {
      return invalid('BAD_REQUEST', 'Discounts exceed the line items', 'order.discounts');
    }
    let discountLeft = discountTotal;
    for (const [index, line] of lineItems.entries()) {
      const gross = line.gross_sales_money as Money;
      const share =
        index === lineItems.length - 1
          ? discountLeft
          : grossTotal === 0
            ? 0
            : Math.floor((discountTotal * gross.amount) / grossTotal);
      discountLeft -= share;
      line.total_discount_money = { amount: share, currency: gross.currency };
      line.total_money = { amount: gross.amount - share, currency: gross.currency };
    }
    const serviceCharges: Json[] = [];
    for (const [index, charge] of list(order.service_charges).entries()) {
      const field = `order.service_charges[${index}]`;
      const amount = isObject(charge) ? readMoney(charge.amount_money) : null;
      if (!isObject(charge) || typeof charge.name !== 'string' || !amount || charge.percentage) {
        return invalid(
          'BAD_REQUEST',
          'The gateway sandbox supports fixed amount_money service charges',
          field,
        );
      }
      if (charge.taxable === true) {
        return invalid('BAD_REQUEST', 'Taxable service charges are not simulated', field);
      }
      currencies.add(amount.currency);
      serviceCharges.push({
        ...charge,
        uid: randomId(22),
        type: 'CUSTOM',
        calculation_phase: charge.calculation_phase ?? 'SUBTOTAL_PHASE',
        applied_money: amount,
        total_money: amount,
        total_tax_money: { amount: 0, currency: amount.currency },
      });
    }
    const [currency = 'USD', ...others] = currencies;
    if (others.length > 0) {
      return invalid('CURRENCY_MISMATCH', 'All money in an order must share one currency');
    }
    const sum = (items: Json[]) =>
      items.reduce((total, item) => total + (item.total_money as Money).amount, 0);
    const serviceChargeTotal = sum(serviceCharges);
    const total = sum(lineItems) + serviceChargeTotal;
    const zero = { amount: 0, currency };
    const timestamp = now();
    const created: Json = {
      ...order,
      id: randomId(29),
      line_items: lineItems,
      ...(discounts.length > 0 ? { discounts } : {}),
      service_charges: serviceCharges,
      state: 'OPEN',
      version: 1,
      created_at: timestamp,
      updated_at: timestamp,
      total_money: { amount: total, currency },
      total_tax_money: zero,
      total_discount_money: { amount: discountTotal, currency },
      total_tip_money: zero,
      total_service_charge_money: { amount: serviceChargeTotal, currency },
      net_amount_due_money: { amount: total, currency },
    };
    orders.set(created.id as string, created);
    context.stats.ordersCreated += 1;
    return { status: 200, body: { order: created } };
  }

  function createPayment(body: Json, decline: boolean): ApiResponse {
    const amount = readMoney(body.amount_money);
    if (typeof body.source_id !== 'string') {
      return invalid('MISSING_REQUIRED_PARAMETER', 'source_id', 'source_id');
    }
    if (!amount || amount.amount === 0) {
      return invalid('INVALID_VALUE', 'amount_money is required', 'amount_money');
    }
    if (typeof body.reference_id === 'string' && body.reference_id.length > 40) {
      return invalid('VALUE_TOO_LONG', 'Must be at most 40 characters', 'reference_id');
    }
    const order = typeof body.order_id === 'string' ? orders.get(body.order_id) : undefined;
    if (body.order_id !== undefined && !order) return invalid('NOT_FOUND', 'Order not found', 'order_id');
    const locationId =
      typeof body.location_id === 'string' ? body.location_id : (order?.location_id ?? 'LSANDBOX');
    if (order) {
      const due = order.net_amount_due_money as Money;
      if (order.state !== 'OPEN') return invalid('BAD_REQUEST', 'The order is already paid', 'order_id');
      if (order.location_id !== locationId) {
        return invalid('LOCATION_MISMATCH', 'Location differs from order');
      }
      if (due.currency !== amount.currency) {
        return invalid('CURRENCY_MISMATCH', 'Currency differs from order');
      }
      if (due.amount !== amount.amount) {
        return invalid(
          'PAYMENT_AMOUNT_MISMATCH',
          'The payment amount must equal the order total',
          'amount_money',
        );
      }
    }
    if (decline || body.source_id === DECLINED_NONCE) {
      return squareError(400, 'PAYMENT_METHOD_ERROR', 'CARD_DECLINED', 'Card declined.');
    }
    if (body.source_id !== APPROVED_NONCE) return invalid('NOT_FOUND', 'Card nonce not found', 'source_id');
    const completed = body.autocomplete !== false;
    const timestamp = now();
    const payment: Json = {
      id: randomId(29),
      created_at: timestamp,
      updated_at: timestamp,
      amount_money: amount,
      total_money: amount,
      approved_money: amount,
      status: completed ? 'COMPLETED' : 'APPROVED',
      source_type: 'CARD',
      // As Square documents a card payment: the issuer's auth_result_code (distinct per payment) and
      // the statement_description the cardholder's statement shows.
      card_details: {
        status: completed ? 'CAPTURED' : 'AUTHORIZED',
        card: { card_brand: 'VISA', last_4: '1111' },
        entry_method: 'KEYED',
        auth_result_code: randomAuthorizationCode(),
        statement_description: SQUARE_STATEMENT_DESCRIPTION,
      },
      location_id: locationId,
      ...(order ? { order_id: order.id } : {}),
      ...(typeof body.reference_id === 'string' ? { reference_id: body.reference_id } : {}),
    };
    payments.set(payment.id as string, payment);
    context.stats.paymentsCreated.gateway_b += 1;
    context.events.square('payment.created', 'payment', payment);
    if (completed) context.events.square('payment.updated', 'payment', payment);
    if (order && completed) {
      const tender = { id: randomId(29), type: 'CARD', amount_money: amount, payment_id: payment.id };
      orders.set(order.id as string, {
        ...order,
        state: 'COMPLETED',
        version: (order.version as number) + 1,
        updated_at: timestamp,
        closed_at: timestamp,
        tenders: [tender],
        net_amount_due_money: { amount: 0, currency: amount.currency },
      });
    }
    return { status: 200, body: { payment } };
  }

  /**
   * RefundPayment, or a refund in the Seller Dashboard: PENDING when made (what the response says),
   * then COMPLETED, as Square settles card refunds shortly after; each step sends its event.
   */
  function createRefund(body: Json, decline: boolean): ApiResponse {
    const paymentId = typeof body.payment_id === 'string' ? body.payment_id : '';
    const payment = payments.get(paymentId);
    if (!payment) return invalid('NOT_FOUND', 'Payment not found', 'payment_id');
    const amount = readMoney(body.amount_money);
    if (!amount || amount.amount === 0)
      return invalid('INVALID_VALUE', 'amount_money is required', 'amount_money');
    const total = payment.total_money as Money;
    if (amount.currency !== total.currency)
      return invalid('CURRENCY_MISMATCH', 'Currency differs from payment');
    if (payment.status !== 'COMPLETED') {
      return invalid('PAYMENT_NOT_REFUNDABLE', 'Only a completed payment can be refunded', 'payment_id');
    }
    const refundedSoFar = list(payment.refund_ids)
      .map((id) => refunds.get(String(id)))
      .filter((refund) => refund && ['PENDING', 'COMPLETED'].includes(String(refund.status)))
      .reduce((sum, refund) => sum + (refund!.amount_money as Money).amount, 0);
    if (amount.amount > total.amount - refundedSoFar) {
      return invalid(
        'REFUND_AMOUNT_INVALID',
        'The refund exceeds what is left of the payment',
        'amount_money',
      );
    }
    if (decline) return squareError(400, 'PAYMENT_METHOD_ERROR', 'CARD_DECLINED', 'The refund was declined.');
    const timestamp = now();
    const refund: Json = {
      id: `${paymentId}_${randomId(22)}`,
      status: 'PENDING',
      amount_money: amount,
      payment_id: paymentId,
      ...(payment.order_id ? { order_id: payment.order_id } : {}),
      location_id: payment.location_id,
      ...(typeof body.reason === 'string' ? { reason: body.reason } : {}),
      created_at: timestamp,
      updated_at: timestamp,
      destination_type: 'CARD',
      // As Square documents a card refund: the card and the issuer's code approving the refund.
      destination_details: {
        card_details: {
          card: (payment.card_details as Json | undefined)?.card ?? { card_brand: 'VISA', last_4: '1111' },
          entry_method: 'KEYED',
          auth_result_code: randomAuthorizationCode(),
        },
      },
    };
    const refundIds = [...list(payment.refund_ids), refund.id];
    refunds.set(refund.id as string, refund);
    payments.set(paymentId, { ...payment, refund_ids: refundIds, updated_at: timestamp });
    context.stats.refundsCreated.gateway_b += 1;
    context.events.square('refund.created', 'refund', refund);
    const completed = { ...refund, status: 'COMPLETED', updated_at: now() };
    refunds.set(refund.id as string, completed);
    const refunded = { amount: refundedSoFar + amount.amount, currency: amount.currency };
    const paymentAfter = { ...payment, refund_ids: refundIds, refunded_money: refunded, updated_at: now() };
    payments.set(paymentId, paymentAfter);
    context.events.square('refund.updated', 'refund', completed);
    context.events.square('payment.updated', 'payment', paymentAfter);
    return { status: 200, body: { refund } };
  }

  const read =
    (store: Store<Json>, name: string) =>
    ({ params: [id = ''] }: ApiRequest) => {
      const found = store.get(id);
      return found
        ? { status: 200, body: { [name]: found } }
        : squareError(404, 'INVALID_REQUEST_ERROR', 'NOT_FOUND', `Could not find ${name} with id ${id}`);
    };

  return {
    prefix: '/v2/',
    routes: [
      {
        method: 'POST',
        pattern: /^\/v2\/orders$/,
        operation: 'square.orders.create',
        handle: (request) => idempotent(request, { max: 192, required: false }, createOrder),
      },
      {
        method: 'GET',
        pattern: /^\/v2\/orders\/([^/]+)$/,
        operation: 'square.orders.get',
        handle: read(orders, 'order'),
      },
      {
        method: 'POST',
        pattern: /^\/v2\/payments$/,
        operation: 'square.payments.create',
        handle: (request) =>
          idempotent(request, { max: 45, required: true }, (body) => createPayment(body, request.decline)),
      },
      {
        method: 'GET',
        pattern: /^\/v2\/payments\/([^/]+)$/,
        operation: 'square.payments.get',
        handle: read(payments, 'payment'),
      },
      {
        method: 'POST',
        pattern: /^\/v2\/refunds$/,
        operation: 'square.refunds.create',
        handle: (request) =>
          idempotent(request, { max: 45, required: true }, (body) => createRefund(body, request.decline)),
      },
      {
        method: 'GET',
        pattern: /^\/v2\/refunds\/([^/]+)$/,
        operation: 'square.refunds.get',
        handle: read(refunds, 'refund'),
      },
      {
        method: 'GET',
        pattern: /^\/v2\/locations\/([^/]+)$/,
        operation: 'square.locations.get',
        handle: ({ params: [id = ''] }) => ({
          status: 200,
          body: {
            location: { id, name: 'Gateway sandbox', status: 'ACTIVE', country: 'US', currency: 'USD' },
          },
        }),
      },
    ],
    unauthorised: (headers) =>
      bearerToken(headers)
        ? null
        : squareError(401, 'AUTHENTICATION_ERROR', 'UNAUTHORIZED', 'The Authorization header is missing'),
    failure: (status) =>
      status === 429
        ? squareError(429, 'RATE_LIMIT_ERROR', 'RATE_LIMITED', 'Sandbox fault: simulated 429')
        : squareError(status, 'API_ERROR', 'INTERNAL_SERVER_ERROR', `Sandbox fault: simulated ${status}`),
    notFound: () => squareError(404, 'INVALID_REQUEST_ERROR', 'NOT_FOUND', 'Unknown endpoint'),
    refund: (paymentId, amount) => {
      const payment = payments.get(paymentId);
      const total = payment?.total_money as Money | undefined;
      const refunded = (payment?.refunded_money as Money | undefined)?.amount ?? 0;
      return createRefund(
        {
          payment_id: paymentId,
          amount_money: {
            amount: amount ?? (total?.amount ?? 0) - refunded,
            currency: total?.currency ?? 'USD',
          },
        },
        false,
      );
    },
  };
}
