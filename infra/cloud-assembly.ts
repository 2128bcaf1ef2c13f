import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CloudAssembly } from 'aws-cdk-lib/cx-api';

/**
 * Synthesizing the app the way the CDK CLI does, offline, and reading what it wrote: used by
 * scripts/infra-resource-counts.ts and by the infra tests' one shared synthesis (test/infra).
 */

/** What a synthesized template holds, as far as reading it goes. */
export interface TemplateJson {
  Resources?: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  Outputs?: Record<string, { Value: unknown }>;
  [section: string]: unknown;
}

export interface SynthesisResult {
  /** The process's exit code: not 0 when the app threw, cdk-nag's findings included. */
  code: number;
  stderr: string;
}

/**
 * Runs the tree's infra/app.ts as `cdk synth` does (CDK_OUTDIR, CDK_CONTEXT_JSON with cdk.json's
 * context), into `outdir`. `context` adds to cdk.json's; `aws:cdk:bundling-stacks: []` skips esbuild,
 * which changes no template but the asset hashes.
 */
export async function synthesizeApp(
  tree: string,
  outdir: string,
  context: Record<string, unknown> = {},
): Promise<SynthesisResult> {
  const cdkJson = JSON.parse(readFileSync(join(tree, 'cdk.json'), 'utf8')) as { context: object };
  try {
    const { stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(tree, 'infra', 'app.ts')],
      {
        cwd: tree,
        maxBuffer: 64 * 1024 * 1024,
        env: {
          ...process.env,
          CDK_OUTDIR: outdir,
          CDK_CONTEXT_JSON: JSON.stringify({ ...cdkJson.context, ...context }),
        },
      },
    );
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stderr: failed.stderr ?? '' };
  }
}

/** The stacks of a synthesized cloud assembly (`cdk.out`), by stack name, with their templates. */
export function assemblyTemplates(outdir: string): Record<string, TemplateJson> {
  return Object.fromEntries(
    new CloudAssembly(outdir).stacks.map((stack) => [stack.stackName, stack.template as TemplateJson]),
  );
}

/**
 * The CDK CLI adds one AWS::CDK::Metadata (version reporting) to each stack it synthesizes, a plain
 * `new App()` does not: it says nothing about the service, so counts leave it out.
 */
const IGNORED_TYPES = new Set(['AWS::CDK::Metadata']);

/** Resources by CloudFormation type, summed over the templates, in type order. */
export function countByType(templates: readonly TemplateJson[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const template of templates) {
    for (const { Type } of Object.values(template.Resources ?? {})) {
      if (!IGNORED_TYPES.has(Type)) counts.set(Type, (counts.get(Type) ?? 0) + 1);
    }
  }
  return Object.fromEntries([...counts].sort(([a], [b]) => a.localeCompare(b)));
}

export const total = (counts: Readonly<Record<string, number>>): number =>
  Object.values(counts).reduce((sum, count) => sum + count, 0);
