import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';
import { encryptBody, paymentBody, readmeArguments } from './typecheck/readme-calls.js';

/**
 * The SDK's types as an integrator meets them: test/sdk/typecheck/readme-calls.ts, compiled here with
 * the SDK's own compiler settings (DOM library, no Node types), sends the README's payment and
 * encrypt bodies through the typed client and must not compile `openEnvelope(wholeResponse)`.
 */

const root = resolve(import.meta.dirname, '..', '..');
const fixture = join(import.meta.dirname, 'typecheck', 'readme-calls.ts');

function sdkCompilerOptions(): ts.CompilerOptions {
  const sdk = join(root, 'packages', 'sdk');
  const file = ts.readConfigFile(join(sdk, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const { options } = ts.parseJsonConfigFileContent(file.config, ts.sys, sdk);
  // Type-checking only: the fixture is outside the SDK's rootDir and nothing is written.
  return {
    ...options,
    noEmit: true,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
    rootDir: root,
  };
}

interface Finding {
  line: number;
  code: string;
  message: string;
}

/** Compiles the fixture (its text replaced by `source` when given); the diagnostics, fixture first. */
function compile(source?: string): { fixture: Finding[]; elsewhere: string[] } {
  const options = sdkCompilerOptions();
  const host = ts.createCompilerHost(options);
  if (source !== undefined) {
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, languageVersion, ...rest) =>
      resolve(name) === fixture
        ? ts.createSourceFile(name, source, languageVersion, true)
        : getSourceFile(name, languageVersion, ...rest);
  }
  const program = ts.createProgram({ rootNames: [fixture], options, host });
  const findings: Finding[] = [];
  const elsewhere: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (diagnostic.file && resolve(diagnostic.file.fileName) === fixture && diagnostic.start !== undefined) {
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      findings.push({ line: line + 1, code: `TS${diagnostic.code}`, message });
    } else {
      elsewhere.push(`${diagnostic.file?.fileName ?? ''} TS${diagnostic.code}: ${message}`);
    }
  }
  return { fixture: findings, elsewhere };
}

const README = readFileSync(join(root, 'README.md'), 'utf8');

/** The walk-through's `RECEIPT=$(jq -n --arg … '{…}')`: its argument names and its jq program. */
function readmeReceiptProgram(): { names: string[]; program: string } {
  const match = /RECEIPT=\$\(jq -n ([^']*)'(\{[\s\S]*?\})'\)/.exec(README);
  if (!match) throw new Error("README.md has no RECEIPT=$(jq -n … '{…}') in its walk-through");
  return { names: [...match[1]!.matchAll(/--arg (\w+) /g)].map((arg) => arg[1]!), program: match[2]! };
}

const jq = (args: string[], input?: string): unknown =>
  JSON.parse(execFileSync('jq', ['-c', ...args], { input: input ?? '', encoding: 'utf8' }));

describe("the SDK's request types", () => {
  it("are the README's bodies: $RECEIPT as jq builds it, and the encrypt body the README derives from it", () => {
    const { names, program } = readmeReceiptProgram();
    expect(names.sort()).toEqual(Object.keys(readmeArguments).sort());
    const args = Object.entries(readmeArguments).flatMap(([name, value]) => ['--arg', name, value]);
    const receipt = jq(['-n', ...args, program]);
    expect(paymentBody).toEqual(receipt);

    const derive = /`jq '([^']+)' <<<"\$RECEIPT"`/.exec(README);
    expect(derive?.[1]).toBeDefined();
    expect(encryptBody).toEqual(jq([derive![1]!], JSON.stringify(receipt)));
  });

  it('compile them, with the SDK compiler settings, as the payment and encrypt bodies of the typed client', () => {
    expect(compile()).toEqual({ fixture: [], elsewhere: [] });
  }, 60_000);

  it('refuse openEnvelope(wholeResponse): each @ts-expect-error marks the error it names, and no other', () => {
    const lines = readFileSync(fixture, 'utf8').split('\n');
    const expected: { line: number; code: string }[] = [];
    const stripped = lines.map((line, index) => {
      const directive = /^\s*\/\/ @ts-expect-error (TS\d+):/.exec(line);
      if (!directive) return line;
      // The directive's line becomes empty, so the error lands on the next line, as numbered here.
      expected.push({ line: index + 2, code: directive[1]! });
      return '';
    });
    expect(expected.length).toBe(3);
    const { fixture: findings, elsewhere } = compile(stripped.join('\n'));
    expect(elsewhere).toEqual([]);
    expect(findings.map(({ line, code }) => ({ line, code }))).toEqual(expected);
    // The two envelope errors are about the envelope's members, not some other mistake on that line.
    for (const finding of findings.filter(({ code }) => code === 'TS2345')) {
      expect(finding.message).toMatch(/not assignable to parameter of type 'Envelope'/);
    }
  }, 60_000);
});
