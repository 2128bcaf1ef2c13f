import { describe, expect, it } from '@jest/globals';
import {
  ReceiptFormatError,
  toCsv,
  toSchemaOrgOrder,
  toUblInvoice,
  toVersaReceipt,
  toVReceipt,
  vReceiptCredentialConfiguration,
  CSV_COLUMNS,
  type DigitalReceipt12,
} from '@receipt-service/receipt-core';
import { breakdownOf, buyer, FIXTURES, oneRate, itemisedRefund } from '../sdk/formats-fixtures.js';
import { claimNames, ds011, versaReceiptValidator } from '../support/standards.js';

/*
 * The JSON and CSV exports of every receipt fixture of issue 37, validated by the official artefacts that
 * are JSON Schemas (Versa's receipt schema, the EWC ds011 vReceipt configuration) and read back; and the
 * typed error of each export when a receipt lacks what its format needs. toUblInvoice's documents are
 * validated in test/sdk/formats.slow.test.ts (Java).
 */
type Name = keyof typeof FIXTURES;
const names = Object.keys(FIXTURES) as Name[];
const cents = (value: number | string) => Math.round(Number(value) * 100);
const sign = (receipt: DigitalReceipt12) => (receipt.type === 'refund' ? -1 : 1);

/** The VAT per category and rate the receipt's lines state, as a map `S 14` → tax in minor units. */
const lineVatPerRate = (receipt: DigitalReceipt12) => {
  const perRate = new Map<string, number>();
  for (const item of receipt.items) {
    for (const tax of item.taxes ?? []) {
      const key = `${tax.category} ${tax.rate}`;
      perRate.set(key, (perRate.get(key) ?? 0) + (tax.amount ?? 0));
    }
  }
  return perRate;
};

function thrown(run: () => unknown): ReceiptFormatError {
  try {
    run();
  } catch (error) {
    if (error instanceof ReceiptFormatError) return error;
    throw error;
  }
  throw new Error('expected a ReceiptFormatError, and nothing was thrown');
}

describe('the fixtures', () => {
  it.each(names)(
    '%s: its breakdown is DECISIONS’ (per rate, rounded half up) and its totals add up',
    (name) => {
      const receipt = FIXTURES[name];
      expect(receipt.summary.taxBreakdown).toEqual(breakdownOf(receipt));
      const breakdown = receipt.summary.taxBreakdown!;
      expect(breakdown.reduce((sum, entry) => sum + entry.taxAmount, 0)).toBe(receipt.summary.totalTax);
      const allowances = (receipt.allowances ?? []).reduce((sum, entry) => sum + entry.amount, 0);
      const charges = (receipt.charges ?? []).reduce((sum, entry) => sum + entry.amount, 0);
      expect(receipt.summary.total).toBe(
        receipt.summary.subtotal -
          allowances +
          charges +
          receipt.summary.totalTax +
          (receipt.summary.tipAmount ?? 0),
      );
      expect(lineVatPerRate(receipt)).toEqual(
        new Map(breakdown.map((entry) => [`${entry.category} ${entry.rate}`, entry.taxAmount])),
      );
    },
  );
});

describe('toVersaReceipt, by Versa’s receipt schema', () => {
  it.each(names)('%s: valid, and its totals, VAT per rate and lines are the receipt’s', async (name) => {
    const receipt = FIXTURES[name];
    const versa = toVersaReceipt(receipt);
    expect((await versaReceiptValidator())(versa)).toEqual([]);
    const s = sign(receipt);
    expect(versa.header.total).toBe(s * receipt.summary.total);
    expect(versa.header.paid).toBe(s * receipt.summary.total);
    expect(versa.header.subtotal).toBe(s * receipt.summary.subtotal);
    expect(versa.header.currency).toBe(receipt.summary.currency.toLowerCase());
    const items = versa.itemization.general.items;
    const perRate = new Map<string, number>();
    items.forEach((item, index) => {
      for (const tax of item.taxes) {
        const key = `${receipt.items[index]!.taxes![0]!.category} ${tax.rate}`;
        perRate.set(key, (perRate.get(key) ?? 0) + s * tax.amount);
      }
    });
    expect(perRate).toEqual(lineVatPerRate(receipt));
    expect(
      items.map((item) => ({
        name: item.description,
        quantity: item.quantity,
        net: s * (item.amount + item.adjustments.reduce((sum, adjustment) => sum + adjustment.amount, 0)),
      })),
    ).toEqual(
      receipt.items.map((item) => ({ name: item.name, quantity: item.quantity, net: item.totalPrice })),
    );
    expect(versa.payments[0]!.card_payment).toEqual({ last_four: '4242', network: 'visa' });
  });

  it('names the line tax without an amount: Versa carries tax per line only', () => {
    const receipt: DigitalReceipt12 = {
      ...oneRate,
      items: [{ ...oneRate.items[0]!, taxes: [{ name: 'ALV', rate: 0.14, category: 'S' }] }],
    };
    const error = thrown(() => toVersaReceipt(receipt));
    expect(error.format).toBe('versa');
    expect(error.field).toBe('items[0].taxes[0].amount');
  });
});

describe('toVReceipt, by the EWC ds011 vReceipt configuration', () => {
  it.each(names)(
    '%s: every claim is a ds011 name; totals, VAT per rate and lines read back',
    async (name) => {
      const receipt = FIXTURES[name];
      const { vct, ...claims } = toVReceipt(receipt);
      expect(vct).toBe('VerifiablevReceiptSDJWT');
      const { claimNames: allowed } = await ds011();
      const emitted = claimNames(claims);
      expect(emitted.filter((claim) => !allowed.has(claim))).toEqual([]);
      expect(emitted).toEqual(
        expect.arrayContaining([
          'PurchaseReceipt.iD',
          'PurchaseReceipt.issueDate',
          'PurchaseReceipt.documentCurrencyCode',
          'MonetaryTotal.payableAmount',
        ]),
      );
      expect(claims.PurchaseReceipt.iD).toBe(receipt.receiptId);
      expect(cents(claims.MonetaryTotal.payableAmount)).toBe(receipt.summary.total);
      expect(cents(claims.TaxTotal.taxAmount)).toBe(receipt.summary.totalTax);
      expect(
        claims.TaxSubtotal.map((entry) => ({
          category: entry.taxCategory_,
          rate: entry.percent / 100,
          taxableAmount: cents(entry.taxableAmount),
          taxAmount: cents(entry.taxSubtotalTaxAmount),
        })),
      ).toEqual(receipt.summary.taxBreakdown);
      expect(
        claims.PurchaseReceiptLine.map((line) => ({
          name: line.item_.itemInstance_.additionalItemProperty.find((p) => p.itemPropertyName === 'name')
            ?.value,
          quantity: line.quantity,
          gross: cents(line.taxInclusiveLineExtentionAmount),
        })),
      ).toEqual(
        receipt.items.map((item) => ({
          name: item.name,
          quantity: item.quantity,
          gross: item.totalPrice + item.taxes![0]!.amount!,
        })),
      );
      if (receipt.type === 'refund')
        expect(claims.PurchaseReceipt.salesDocumentReference).toBe(receipt.relatedReceiptId);
    },
  );

  it('publishes issuer metadata that validates against ds011, naming every claim toVReceipt emits', async () => {
    const configuration = vReceiptCredentialConfiguration({
      name: 'Receipt',
      locale: 'en',
      backgroundColor: '#12355b',
      textColor: '#ffffff',
      logo: { uri: 'https://receipts.example.com/logo.png', altText: 'Receipt service' },
    });
    const { validateMetadata, claimNames: allowed } = await ds011();
    expect(validateMetadata(configuration)).toEqual([]);
    expect(Object.keys(configuration.claims).filter((claim) => !allowed.has(claim))).toEqual([]);
    for (const name of names) {
      const { vct: _vct, ...claims } = toVReceipt(FIXTURES[name]);
      for (const claim of claimNames(claims)) expect(configuration.claims).toHaveProperty([claim]);
    }
    // ds011 holds the metadata to its shape: without its required display, it does not validate.
    expect(validateMetadata({ ...configuration, display: undefined }).join('\n')).toMatch(/display/);
  });

  it('names the missing VAT breakdown', () => {
    const { taxBreakdown: _breakdown, ...summary } = oneRate.summary;
    expect(thrown(() => toVReceipt({ ...oneRate, summary })).field).toBe('summary.taxBreakdown');
  });
});

describe('toSchemaOrgOrder', () => {
  it.each(names)('%s: an Order whose lines and total are the receipt’s', (name) => {
    const receipt = FIXTURES[name];
    const order = toSchemaOrgOrder(receipt);
    expect(order['@context']).toBe('https://schema.org');
    expect(order['@type']).toBe('Order');
    expect(order.orderNumber).toBe(receipt.receiptId);
    expect(cents(order.partOfInvoice.totalPaymentDue.price)).toBe(receipt.summary.total);
    expect(order.partOfInvoice.totalPaymentDue.priceCurrency).toBe(receipt.summary.currency);
    expect(order.seller.vatID).toBe(receipt.merchant.vatId);
    expect(
      order.acceptedOffer.map((offer) => ({
        name: offer.itemOffered.name,
        quantity: offer.eligibleQuantity.value,
        unitPrice: cents(offer.price),
      })),
    ).toEqual(
      receipt.items.map((item) => ({ name: item.name, quantity: item.quantity, unitPrice: item.unitPrice })),
    );
    expect(order.orderStatus).toBe(
      receipt.type === 'refund' ? 'https://schema.org/OrderReturned' : 'https://schema.org/OrderDelivered',
    );
  });
});

/** RFC 4180's grammar, for reading the export back: quoted fields may hold commas, quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        field += '"';
        index++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\r' && text[index + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      index++;
    } else field += char;
  }
  expect(row).toEqual([]);
  expect(field).toBe('');
  return rows;
}

describe('toCsv (RFC 4180)', () => {
  const receipts = names.map((name) => FIXTURES[name]);
  const csv = toCsv(receipts);
  const [header, ...rows] = parseCsv(csv);
  const records = rows.map((row) =>
    Object.fromEntries(header!.map((column, index) => [column, row[index]!])),
  );

  it('writes a header row and one row per line, CRLF-terminated, sale and refund rows alike', () => {
    expect(header).toEqual([...CSV_COLUMNS]);
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(csv.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/);
    expect(records).toHaveLength(receipts.reduce((sum, receipt) => sum + receipt.items.length, 0));
    for (const row of rows) expect(row).toHaveLength(CSV_COLUMNS.length);
  });

  it.each(names)('%s: its rows give back its totals, VAT per rate and lines (refunds negative)', (name) => {
    const receipt = FIXTURES[name];
    const s = sign(receipt);
    const own = records.filter((record) => record.receiptId === receipt.receiptId);
    expect(own).toHaveLength(receipt.items.length);
    for (const record of own) {
      expect(cents(record.receiptTotal!)).toBe(s * receipt.summary.total);
      expect(cents(record.receiptTax!)).toBe(s * receipt.summary.totalTax);
      expect(record.type).toBe(receipt.type ?? 'sale');
    }
    const perRate = new Map<string, number>();
    for (const record of own) {
      const key = `${record.vatCategory} ${Number(record.vatRate) / 100}`;
      perRate.set(key, (perRate.get(key) ?? 0) + s * cents(record.lineTax!));
    }
    expect(perRate).toEqual(lineVatPerRate(receipt));
    expect(
      own.map((record) => ({
        name: record.name,
        quantity: Number(record.quantity),
        net: s * cents(record.lineNet!),
        unitCode: record.unitCode,
      })),
    ).toEqual(
      receipt.items.map((item) => ({
        name: item.name,
        quantity: item.quantity,
        net: item.totalPrice,
        unitCode: item.unitCode ?? 'C62',
      })),
    );
  });

  it('quotes what needs quoting, and defuses text a spreadsheet would run as a formula', () => {
    const tricky: DigitalReceipt12 = {
      ...oneRate,
      items: [
        { ...oneRate.items[0]!, name: '=HYPERLINK("http://evil.example","Flat, white")\r\nsecond line' },
      ],
    };
    const [, row] = parseCsv(toCsv([tricky]));
    expect(row![CSV_COLUMNS.indexOf('name')]).toBe(
      `'=HYPERLINK("http://evil.example","Flat, white")\r\nsecond line`,
    );
  });

  it('gives a refund of an amount, which names no lines, one row with its totals', () => {
    const [, row, ...rest] = parseCsv(toCsv([{ ...itemisedRefund, items: [] }]));
    expect(rest).toEqual([]);
    expect(row![CSV_COLUMNS.indexOf('receiptTotal')]).toBe('-4.56');
    expect(row![CSV_COLUMNS.indexOf('name')]).toBe('');
  });
});

describe('toUblInvoice’s typed errors: a field the format needs, named, never invented', () => {
  const cases: [string, () => unknown, string][] = [
    [
      'no seller VAT number on a standard-rated invoice',
      () => toUblInvoice({ ...oneRate, merchant: { ...oneRate.merchant, vatId: undefined } }, { buyer }),
      'merchant.vatId',
    ],
    ['no buyer', () => toUblInvoice(oneRate, undefined as never), 'buyer'],
    [
      'a buyer without the reference Peppol requires',
      () => toUblInvoice(oneRate, { buyer: { ...buyer, reference: '' } }),
      'buyer.reference',
    ],
    [
      'a buyer without an electronic address',
      () => toUblInvoice(oneRate, { buyer: { ...buyer, endpoint: undefined as never } }),
      'buyer.endpoint',
    ],
    [
      'a buyer without a country',
      () => toUblInvoice(oneRate, { buyer: { ...buyer, address: {} as never } }),
      'buyer.address.country',
    ],
    [
      'no legal name',
      () => toUblInvoice({ ...oneRate, merchant: { ...oneRate.merchant, legalName: undefined } }, { buyer }),
      'merchant.legalName',
    ],
    [
      'no seller electronic address',
      () => toUblInvoice({ ...oneRate, merchant: { ...oneRate.merchant, endpoint: undefined } }, { buyer }),
      'merchant.endpoint',
    ],
    [
      'a line without a VAT category',
      () =>
        toUblInvoice(
          {
            ...oneRate,
            items: [
              oneRate.items[0]!,
              { ...oneRate.items[1]!, taxes: [{ name: 'Tax', rate: 0.14, amount: 49 }] },
            ],
          },
          { buyer },
        ),
      'items[1].taxes[0].category',
    ],
    [
      'a line whose name is blank (Peppol refuses empty elements)',
      () =>
        toUblInvoice(
          { ...oneRate, items: [{ ...oneRate.items[0]!, name: ' ' }, oneRate.items[1]!] },
          { buyer },
        ),
      'items[0].name',
    ],
    [
      'a control character in a line name, which XML cannot carry',
      () =>
        toUblInvoice(
          { ...oneRate, items: [oneRate.items[0]!, { ...oneRate.items[1]!, name: 'Bun\u0007' }] },
          { buyer },
        ),
      'items[1].name',
    ],
    [
      'no VAT breakdown',
      () => toUblInvoice({ ...oneRate, summary: { ...oneRate.summary, taxBreakdown: undefined } }, { buyer }),
      'summary.taxBreakdown',
    ],
    [
      'a refund of an amount, which names no lines',
      () => toUblInvoice({ ...itemisedRefund, items: [] }, { buyer }),
      'items',
    ],
    [
      'a refund that does not name its sale',
      () => toUblInvoice({ ...itemisedRefund, relatedReceiptId: undefined }, { buyer }),
      'relatedReceiptId',
    ],
  ];

  it.each(cases)('%s', (_case, run, field) => {
    const error = thrown(run);
    expect(error.name).toBe('ReceiptFormatError');
    expect(error.format).toBe('ubl');
    expect(error.field).toBe(field);
    expect(error.message).toContain(field);
  });
});
