#!/usr/bin/env node
/*
 * `npm run lint:changed`: what `npm run lint` checks, for what changed only: the files changed since
 * this branch left main (its merge base) and those changed in the working tree, new ones included.
 * ESLint and Prettier look at those files; the type check is the whole project's (a change can break
 * a caller elsewhere), made incremental so that a second run re-checks only what changed since the
 * last (its state in node_modules/.cache). The import boundaries (dependency-cruiser) and the whole
 * tree's formatting are left to `npm run lint` and CI.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const git = (...args) =>
  execFileSync('git', args, { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);
const tryGit = (...args) => {
  try {
    return git(...args);
  } catch {
    return undefined;
  }
};

let base;
for (const ref of ['main', 'origin/main']) base ??= tryGit('merge-base', 'HEAD', ref)?.[0];
const changed = new Set([
  ...(base ? git('diff', '--name-only', '--diff-filter=ACMR', base, 'HEAD') : []),
  ...git('diff', '--name-only', '--diff-filter=ACMR', 'HEAD'),
  ...git('ls-files', '--others', '--exclude-standard'),
]);
const files = [...changed].filter((file) => existsSync(join(root, file)));
console.log(
  `${files.length} changed file${files.length === 1 ? '' : 's'} (since ${base ? `main at ${base.slice(0, 7)}` : 'HEAD'}, working tree included)`,
);

const bin = (name) => join(root, 'node_modules', '.bin', name);
const step = (title, command, args) => {
  const started = Date.now();
  const run = spawnSync(command, args, { cwd: root, stdio: 'inherit' });
  console.log(
    `${run.status === 0 ? 'ok  ' : 'FAIL'} ${title} (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  return run.status === 0;
};

const lintable = files.filter((file) => /\.(ts|js|mjs|cjs)$/.test(file));
const results = [
  lintable.length === 0 ||
    step(`eslint, ${lintable.length} files`, bin('eslint'), ['--no-warn-ignored', ...lintable]),
  files.length === 0 ||
    step(`prettier, ${files.length} files`, bin('prettier'), ['--check', '--ignore-unknown', ...files]),
  step('tsc, incremental', bin('tsc'), [
    '--noEmit',
    '-p',
    '.',
    '--incremental',
    '--tsBuildInfoFile',
    join('node_modules', '.cache', 'lint-changed.tsbuildinfo'),
  ]),
];
process.exit(results.every(Boolean) ? 0 : 1);
