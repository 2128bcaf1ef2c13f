import { beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { XMLParser } from 'fast-xml-parser';
import { toUblInvoice } from '@receipt-service/receipt-core';
import type { DigitalReceipt12 } from '@receipt-service/receipt-core';
import { fatal, ublErrors, validateUbl, warnings, type UblResult } from '../support/standards.js';
import { arbitraryReceipt, buyer, FIXTURES } from './formats-fixtures.js';

/*
 * Every receipt fixture of issue 37 as a UBL Invoice or CreditNote, validated by the official artefacts
 * (the UBL 2.1 schemas, CEN's EN 16931 rules, OpenPEPPOL's BIS Billing 3.0 rules) in one JVM run, and read
 * back: the totals, the VAT per rate and the lines are the receipt's own. Slow tier: Java.
 */
type Name = keyof typeof FIXTURES;
const names = Object.keys(FIXTURES) as Name[];

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  removeNSPrefix: true,
  parseTagValue: false,
  isArray: (name) => ['InvoiceLine', 'CreditNoteLine', 'TaxSubtotal', 'AllowanceCharge'].includes(name),
});
type Node = Record<string, unknown>;
const textOf = (node: unknown): string =>
  typeof node === 'object' && node !== null ? String((node as Node)['#text']) : String(node);
/** A UBL amount back in minor units (the fixtures are in EUR). */
const minor = (node: unknown): number => Math.round(Number(textOf(node)) * 100);

describe('toUblInvoice, validated by the official EN 16931 and Peppol artefacts', () => {
  const documents = Object.fromEntries(
    names.map((name) => [name, toUblInvoice(FIXTURES[name], { buyer })]),
  ) as Record<Name, string>;
  // oneRate with its total with VAT one cent off, in the same batch: the harness must not pass whatever it gets.
  const broken = documents.oneRate.replace(
    /<cbc:TaxInclusiveAmount currencyID="EUR">13\.11<\/cbc:TaxInclusiveAmount>/,
    '<cbc:TaxInclusiveAmount currencyID="EUR">13.12</cbc:TaxInclusiveAmount>',
  );
  // Random receipts DECISIONS' rules accept, from a fixed seed (the same ones every run), in the same batch.
  const samples = fc.sample(arbitraryReceipt(), { seed: 37, numRuns: 30 });
  const sampleDocuments = Object.fromEntries(
    samples.map((receipt, index) => [`sample ${index}`, toUblInvoice(receipt, { buyer })]),
  );
  let results: Record<string, UblResult>;

  beforeAll(async () => {
    // One JVM for the whole batch.
    results = await validateUbl({ ...documents, broken, ...sampleDocuments });
  }, 180_000);

  it.each(names)('%s: 0 schema errors, 0 failed EN 16931 rules, 0 Peppol fatal (and no warning)', (name) => {
    const result = results[name]!;
    expect(ublErrors(result)).toEqual([]);
    expect(result.rules.en16931.filter((finding) => finding.kind === 'failed-assert')).toEqual([]);
    expect(fatal(result.rules.peppol)).toEqual([]);
    expect(warnings(result.rules.peppol)).toEqual([]);
  });

  it.each(names)('%s: the totals, the VAT per rate and the lines read back are the receipt own', (name) => {
    const receipt: DigitalReceipt12 = FIXTURES[name];
    const isRefund = receipt.type === 'refund';
    const parsed = parser.parse(documents[name]) as Node;
    const root = parsed[isRefund ? 'CreditNote' : 'Invoice'] as Node;
    expect(root).toBeDefined();
    expect(textOf(root.ID)).toBe(receipt.receiptId);
    expect(textOf(root.DocumentCurrencyCode)).toBe(receipt.summary.currency);

    const totals = root.LegalMonetaryTotal as Node;
    const tip = receipt.summary.tipAmount ?? 0;
    expect(minor(totals.LineExtensionAmount)).toBe(receipt.summary.subtotal);
    expect(minor(totals.TaxInclusiveAmount)).toBe(receipt.summary.total - tip);
    expect(minor(totals.PrepaidAmount)).toBe(receipt.summary.total - tip);
    expect(minor(totals.PayableAmount)).toBe(0);
    expect(minor((root.TaxTotal as Node).TaxAmount)).toBe(receipt.summary.totalTax);

    const perRate = ((root.TaxTotal as Node).TaxSubtotal as Node[]).map((subtotal) => ({
      category: textOf((subtotal.TaxCategory as Node).ID),
      rate: Number(textOf((subtotal.TaxCategory as Node).Percent)) / 100,
      taxableAmount: minor(subtotal.TaxableAmount),
      taxAmount: minor(subtotal.TaxAmount),
    }));
    expect(perRate).toEqual(receipt.summary.taxBreakdown);

    const lines = (root[isRefund ? 'CreditNoteLine' : 'InvoiceLine'] as Node[]).map((line) => ({
      name: textOf((line.Item as Node).Name),
      quantity: Number(textOf(line[isRefund ? 'CreditedQuantity' : 'InvoicedQuantity'])),
      unitCode: (line[isRefund ? 'CreditedQuantity' : 'InvoicedQuantity'] as Node)['@_unitCode'],
      unitPrice: minor((line.Price as Node).PriceAmount),
      totalPrice: minor(line.LineExtensionAmount),
      rate: Number(textOf(((line.Item as Node).ClassifiedTaxCategory as Node).Percent)) / 100,
    }));
    expect(lines).toEqual(
      receipt.items.map((item) => ({
        name: item.name,
        quantity: item.quantity,
        unitCode: item.unitCode ?? 'C62',
        unitPrice: item.unitPrice,
        totalPrice: item.totalPrice,
        rate: item.taxes![0]!.rate,
      })),
    );

    const means = root.PaymentMeans as Node;
    expect(textOf(means.PaymentMeansCode)).toBe('48');
    expect(textOf((means.CardAccount as Node).PrimaryAccountNumberID)).toBe('4242');
    if (isRefund) {
      expect(textOf(root.CreditNoteTypeCode)).toBe('381');
      const reference = (root.BillingReference as Node).InvoiceDocumentReference as Node;
      expect(textOf(reference.ID)).toBe(receipt.relatedReceiptId);
    } else {
      expect(textOf(root.InvoiceTypeCode)).toBe('380');
    }
  });

  it('conforms for 30 random receipts too: counted and weighed lines, four rates, discounts, allowances, charges, tips, refunds', () => {
    expect(new Set(samples.map((receipt) => receipt.type ?? 'sale'))).toEqual(new Set(['sale', 'refund']));
    const failures = samples.flatMap((receipt, index) => {
      const result = results[`sample ${index}`]!;
      const errors = [
        ...ublErrors(result),
        ...warnings(result.rules.peppol).map((finding) => `peppol warning ${finding.id}`),
      ];
      return errors.length > 0 ? [{ receipt, errors }] : [];
    });
    expect(failures).toEqual([]);
  });

  it('dates the invoice on the day of the sale where it happened, not in UTC', () => {
    const root = (parser.parse(documents.oneRate) as Node).Invoice as Node;
    // 22:15 UTC on 21 November is 00:15 on 22 November in Helsinki.
    expect(textOf(root.IssueDate)).toBe('2026-11-22');
  });

  it('carries the receipt code as a supporting document reference', () => {
    const root = (parser.parse(documents.withReceiptCode) as Node).Invoice as Node;
    expect(textOf((root.AdditionalDocumentReference as Node).ID)).toBe('RC2026112100042');
  });

  it('is caught by the rules when a total is wrong: the harness does not pass whatever it is given', () => {
    expect(broken).not.toBe(documents.oneRate);
    expect(fatal(results.broken!.rules.en16931).map((finding) => finding.id)).toContain('BR-CO-15');
  });
});
