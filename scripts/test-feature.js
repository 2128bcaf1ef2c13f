#!/usr/bin/env node
/*
 * `npm run test:feature -- <feature> [more features] [jest options]`: every tier's tests of one
 * feature (a folder of functions/), the one-minute loop of CONTRIBUTING.md. A test file is the
 * feature's when its file or folder name begins with the feature's name or its singular
 * (payments: payments.test.ts, payment-lifecycle.test.ts, in any tier), and a unit test is also when
 * it imports the feature's lib/ or functions/ folder. The files go to Jest by path, so each tier's
 * setup (DynamoDB Local, the synthesis) runs only when one of its files is in the run.
 */
import { spawnSync } from 'node:child_process';
import process from 'node:process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const features = readdirSync(join(root, 'functions'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

const args = process.argv.slice(2);
const named = args.filter((arg) => !arg.startsWith('-'));
const jestOptions = args.filter((arg) => arg.startsWith('-'));
const unknown = named.filter((name) => !features.includes(name));
if (named.length === 0 || unknown.length > 0) {
  console.error(
    `${named.length === 0 ? 'Name a feature' : `No feature named ${unknown.join(', ')}`}: ` +
      `npm run test:feature -- <${features.join('|')}> [jest options]`,
  );
  process.exit(2);
}

/** Every *.test.ts under test/, as paths from the repository's root. */
function testFiles(folder) {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const stems = named.flatMap((name) => [name, name.replace(/s$/, '')]);
const namedFor = (path) =>
  path
    .split(sep)
    .slice(1)
    .some((part) =>
      stems.some((stem) => part === stem || part.startsWith(`${stem}-`) || part.startsWith(`${stem}.`)),
    );
const importsFeature = (path) => {
  const source = readFileSync(join(root, path), 'utf8');
  return named.some((name) => source.includes(`lib/${name}/`) || source.includes(`functions/${name}/`));
};
const files = testFiles('test').filter(
  (path) => namedFor(path) || (path.startsWith(`test${sep}unit${sep}`) && importsFeature(path)),
);
if (files.length === 0) {
  console.error(`No test file of ${named.join(', ')} found under test/`);
  process.exit(1);
}
console.log(
  `${named.join(', ')}: ${files.length} test files\n  ${files.map((file) => relative('.', join(root, file))).join('\n  ')}`,
);

const jest = join(root, 'node_modules', '.bin', 'jest');
const run = spawnSync(jest, ['--runTestsByPath', ...jestOptions, ...files], { cwd: root, stdio: 'inherit' });
process.exit(run.status ?? 1);
