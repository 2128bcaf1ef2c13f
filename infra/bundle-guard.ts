import { readFileSync, rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * Run after esbuild bundles a function (see service-function.ts): fails the synth when any module
 * under local/ reached the bundle. local/ holds the gateway sandbox and other test doubles, which
 * must never ship in a Lambda. The metafile is deleted afterwards so it does not ship either.
 */
export interface EsbuildMetafile {
  inputs: Record<string, unknown>;
}

const forbiddenRoots = ['local/'];

/** Input paths in a metafile are relative to the project root, with forward slashes. */
export function forbiddenInputs(metafile: EsbuildMetafile): string[] {
  return Object.keys(metafile.inputs).filter((input) => {
    const path = input.replace(/\\/g, '/').replace(/^\.\//, '');
    return forbiddenRoots.some((root) => path.startsWith(root));
  });
}

function main(metafilePath: string | undefined): void {
  if (!metafilePath) throw new Error('usage: bundle-guard <index.meta.json>');
  const metafile = JSON.parse(readFileSync(metafilePath, 'utf8')) as EsbuildMetafile;
  const found = forbiddenInputs(metafile);
  rmSync(metafilePath);
  if (found.length > 0) {
    console.error(`Lambda bundle includes test doubles from local/: ${found.join(', ')}`);
    process.exit(1);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv[2]);
