import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from '@jest/globals';
import {
  fatal,
  validateUblFiles,
  versaReceiptValidator,
  type DocumentResult,
  type UnitTestResult,
} from '../support/standards.js';

/*
 * The harness proved on the artefacts' own published files: the examples that come with each rule set pass
 * with no error, and each test of the EN 16931 unit test set fails exactly when it says it must, naming its
 * rule. Slow tier: one JVM (Saxon and the JDK's schema validator) for the whole file.
 */
const VENDOR = join(import.meta.dirname, '..', 'vendor');
const EXAMPLES = {
  cenInvoice: join(VENDOR, 'en16931-ubl', 'examples', 'ubl-tc434-example1.xml'),
  cenCreditNote: join(VENDOR, 'en16931-ubl', 'examples', 'ubl-tc434-creditnote1.xml'),
  peppolInvoice: join(VENDOR, 'peppol-bis-billing-3', 'examples', 'base-example.xml'),
  peppolCreditNote: join(VENDOR, 'peppol-bis-billing-3', 'examples', 'base-creditnote-correction.xml'),
};
const UNIT_TESTS = join(VENDOR, 'en16931-ubl', 'test', 'Invoice-BR-CO-15.xml');

const ids = (result: DocumentResult | UnitTestResult, set: 'en16931' | 'peppol') =>
  fatal(result.rules[set]).map((finding) => finding.id);

describe('the validation harness, on the official artefacts own files', () => {
  let documents: Record<keyof typeof EXAMPLES, DocumentResult>;
  let unitTests: UnitTestResult[];

  beforeAll(async () => {
    const names = Object.keys(EXAMPLES) as (keyof typeof EXAMPLES)[];
    const results = await validateUblFiles([...names.map((name) => EXAMPLES[name]), UNIT_TESTS]);
    documents = Object.fromEntries(names.map((name, index) => [name, results[index]])) as typeof documents;
    unitTests = results.slice(names.length) as UnitTestResult[];
  }, 180_000);

  it("passes CEN's own UBL invoice and credit note examples: schema-valid, no EN 16931 rule failed", () => {
    for (const example of [documents.cenInvoice, documents.cenCreditNote]) {
      expect(example.xsd).toEqual([]);
      expect(example.rules.en16931.filter((finding) => finding.kind === 'failed-assert')).toEqual([]);
    }
    expect(documents.cenInvoice.root).toBe('Invoice');
    expect(documents.cenCreditNote.root).toBe('CreditNote');
  });

  it("passes OpenPEPPOL's base invoice and credit note: no fatal under either rule set", () => {
    for (const example of [documents.peppolInvoice, documents.peppolCreditNote]) {
      expect(example.xsd).toEqual([]);
      expect(ids(example, 'en16931')).toEqual([]);
      expect(ids(example, 'peppol')).toEqual([]);
    }
  });

  it("fails CEN's examples under Peppol's rules, naming them: they are EN 16931 documents, not Peppol ones", () => {
    expect(ids(documents.cenInvoice, 'peppol')).toEqual(
      expect.arrayContaining(['PEPPOL-EN16931-R001', 'PEPPOL-EN16931-R003', 'PEPPOL-EN16931-R004']),
    );
  });

  it('reports each unit test of BR-CO-15 as the test set expects: the rule fails exactly in the tests that say so', () => {
    expect(unitTests.length).toBeGreaterThanOrEqual(4);
    const failing = unitTests.filter((test) => test.expected.error.includes('BR-CO-15'));
    const passing = unitTests.filter((test) => test.expected.success.includes('BR-CO-15'));
    expect(failing.length).toBeGreaterThan(0);
    expect(passing.length).toBeGreaterThan(0);
    for (const test of failing) expect(ids(test, 'en16931')).toContain('BR-CO-15');
    for (const test of passing) expect(ids(test, 'en16931')).not.toContain('BR-CO-15');
    const finding = fatal(failing[0]!.rules.en16931).find((candidate) => candidate.id === 'BR-CO-15');
    expect(finding?.flag).toBe('fatal');
    expect(finding?.text).toMatch(/Invoice total amount with VAT/);
  });
});

describe("the harness, on Versa's own example receipts", () => {
  it('passes each example and fails a broken one naming the field', async () => {
    const validate = await versaReceiptValidator();
    for (const name of ['ecommerce', 'flight', 'subscription']) {
      const example = JSON.parse(
        await readFile(join(VENDOR, 'versa-receipt', 'examples', `${name}.json`), 'utf8'),
      );
      expect(validate(example)).toEqual([]);
    }
    const example = JSON.parse(
      await readFile(join(VENDOR, 'versa-receipt', 'examples', 'ecommerce.json'), 'utf8'),
    );
    expect(validate({ ...example, header: { ...example.header, currency: 12 } }).join('\n')).toMatch(
      /\/header\/currency/,
    );
  });
});
