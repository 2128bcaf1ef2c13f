import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';
import formatsModule from 'ajv-formats';

/*
 * The official artefacts of each receipt format (test/vendor, each folder's PROVENANCE.md says where from),
 * as one harness: UBL by the OASIS schemas and the CEN and OpenPEPPOL Schematron rules (Validate.java, one
 * JVM for a whole batch: starting Java and compiling the rules' XSLT costs seconds, checking a document
 * milliseconds), Versa's receipt schema and the EU wallet consortium's ds011 vReceipt configuration by ajv.
 */

const VENDOR = join(import.meta.dirname, '..', 'vendor');
export const ARTEFACTS = {
  invoiceXsd: join(VENDOR, 'ubl-2.1', 'xsdrt', 'maindoc', 'UBL-Invoice-2.1.xsd'),
  creditNoteXsd: join(VENDOR, 'ubl-2.1', 'xsdrt', 'maindoc', 'UBL-CreditNote-2.1.xsd'),
  en16931: join(VENDOR, 'en16931-ubl', 'xslt', 'EN16931-UBL-validation.xslt'),
  peppol: join(VENDOR, 'peppol-bis-billing-3', 'xslt', 'PEPPOL-EN16931-UBL.xslt'),
  versaReceiptSchema: join(VENDOR, 'versa-receipt', 'receipt.schema.json'),
  ds011: join(VENDOR, 'ewc-ds011-vreceipt', 'ds011-vReceipts.json'),
} as const;

/** Debian's libsaxonhe-java (.ci/run installs it); SAXON_JAR names another copy. */
const SAXON_JAR = process.env.SAXON_JAR ?? '/usr/share/java/Saxon-HE.jar';
const VALIDATOR = join(import.meta.dirname, 'standards', 'Validate.java');

export type RuleSet = 'en16931' | 'peppol';

/** One Schematron assertion that failed, or report that fired, as SVRL gives it. */
export interface RuleFinding {
  kind: 'failed-assert' | 'successful-report';
  /** The rule's id, e.g. BR-CO-15 or PEPPOL-EN16931-R003. */
  id: string | null;
  /** `fatal` or `warning`. */
  flag: string | null;
  location: string | null;
  text: string;
}

export interface UblResult {
  /** The UBL schema's errors; null for a unit test's snippet, which is checked by the rules only. */
  xsd: { line: number; message: string }[] | null;
  rules: Record<RuleSet, RuleFinding[]>;
}

/** A document checked in its own right. */
export interface DocumentResult extends UblResult {
  file: string;
  root: string;
}

/** One test of a VEFA test set (the EN 16931 repository's unit tests), with the rule ids it expects. */
export interface UnitTestResult extends UblResult {
  file: string;
  test: number;
  expected: { success: string[]; error: string[]; warning: string[] };
}

/** The failed assertions flagged `fatal` (EN 16931's are all fatal) and the rest, for error messages. */
export const fatal = (findings: readonly RuleFinding[]): RuleFinding[] =>
  findings.filter((finding) => finding.kind === 'failed-assert' && finding.flag !== 'warning');
export const warnings = (findings: readonly RuleFinding[]): RuleFinding[] =>
  findings.filter((finding) => finding.kind === 'failed-assert' && finding.flag === 'warning');

/** Every error of a result in one line each: empty when the document conforms. */
export function ublErrors(result: UblResult): string[] {
  return [
    ...(result.xsd ?? []).map((error) => `UBL 2.1 schema, line ${error.line}: ${error.message}`),
    ...(['en16931', 'peppol'] as const).flatMap((set) =>
      fatal(result.rules[set]).map((finding) => `${set} ${finding.id}: ${finding.text}`),
    ),
  ];
}

/**
 * Checks UBL files (and VEFA test sets) in one JVM run by the UBL 2.1 schemas and both rule sets, in the
 * order given. A Java failure (no Java, no Saxon) is thrown with its output.
 */
export async function validateUblFiles(
  files: readonly string[],
): Promise<(DocumentResult | UnitTestResult)[]> {
  const args = [
    '-cp',
    SAXON_JAR,
    VALIDATOR,
    '--xsd',
    `Invoice=${ARTEFACTS.invoiceXsd}`,
    '--xsd',
    `CreditNote=${ARTEFACTS.creditNoteXsd}`,
    '--rules',
    `en16931=${ARTEFACTS.en16931}`,
    '--rules',
    `peppol=${ARTEFACTS.peppol}`,
    '--',
    ...files,
  ];
  const { stdout } = await promisify(execFile)('java', args, { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as (DocumentResult | UnitTestResult)[];
}

/** Checks UBL documents given as text, by name, in one JVM run. */
export async function validateUbl(
  documents: Readonly<Record<string, string>>,
): Promise<Record<string, UblResult>> {
  const folder = await mkdtemp(join(tmpdir(), 'ubl-'));
  try {
    const names = Object.keys(documents);
    const files = names.map((name, index) => join(folder, `${index}.xml`));
    await Promise.all(names.map((name, index) => writeFile(files[index]!, documents[name]!)));
    const results = await validateUblFiles(files);
    return Object.fromEntries(names.map((name, index) => [name, results[index]!]));
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

const readJson = async (path: string): Promise<unknown> =>
  JSON.parse(await readFile(path, 'utf8')) as unknown;
const describeErrors = (errors: ErrorObject[] | null | undefined): string[] =>
  (errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message ?? ''}`.trim());

/** A validator of Versa receipts by Versa's own JSON Schema (draft 2020-12): the errors, empty when valid. */
export async function versaReceiptValidator(): Promise<(receipt: unknown) => string[]> {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  formatsModule.default(ajv);
  const validate = ajv.compile((await readJson(ARTEFACTS.versaReceiptSchema)) as object);
  return (receipt) => (validate(receipt) ? [] : describeErrors(validate.errors));
}

/** The ds011 vReceipt configuration: its claim names, and a validator of issuer metadata (draft-07). */
export async function ds011(): Promise<{
  claimNames: Set<string>;
  validateMetadata: (metadata: unknown) => string[];
}> {
  const schema = (await readJson(ARTEFACTS.ds011)) as {
    properties: { claims: { properties: Record<string, unknown> } };
  };
  const ajv = new Ajv({ allErrors: true, strict: false });
  formatsModule.default(ajv);
  const validate = ajv.compile(schema);
  return {
    claimNames: new Set(Object.keys(schema.properties.claims.properties)),
    validateMetadata: (metadata) => (validate(metadata) ? [] : describeErrors(validate.errors)),
  };
}

/**
 * The dotted names of a claim set as ds011 spells them: nested objects joined by dots, from the first
 * level that is a ds011 group (`PurchaseReceipt`, `MonetaryTotal`, ...); the entries of an array (a
 * repeated group) are named like the group itself.
 */
export function claimNames(claims: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(claims).flatMap(([key, value]) => {
    const name = prefix ? `${prefix}.${key}` : key;
    const entries = Array.isArray(value) ? value : [value];
    return entries.flatMap((entry: unknown) =>
      entry !== null && typeof entry === 'object' && !Array.isArray(entry)
        ? claimNames(entry as Record<string, unknown>, name)
        : [name],
    );
  });
}
