import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rateGroupOf, type RouteDeclaration } from '../kernel/route.js';
import { rateGroups, type RateGroup, type TierTable } from '../kernel/tiers.js';

/**
 * The OpenAPI document's overview (info.description) is docs/api-overview.md, written for the
 * integrator who reads only the reference. This module reads it and fills in what the route
 * declarations and the tiers decide, so those facts keep one home.
 */
export const API_OVERVIEW_FILE = 'api-overview.md';

/** Read from the source tree: the document is built by `npm run openapi`, CDK synthesis and tests, never in a function. */
function readOverviewSource(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return readFileSync(join(here, '..', '..', 'docs', API_OVERVIEW_FILE), 'utf8');
}

const groupTitles: Record<RateGroup, string> = {
  general: 'other keyed endpoints',
  keyGeneration: 'key generation',
  payments: 'payments',
};

const operation = (route: RouteDeclaration) => `\`${route.method} ${route.path}\``;

/** What each `<!-- generated: name -->` comment of the overview stands for. */
function generatedParts(tiers: TierTable, routes: readonly RouteDeclaration[]): Record<string, string> {
  const keyed = (group: RateGroup) =>
    routes.filter((route) => route.apiKeyRequired && rateGroupOf(route) === group).map(operation);
  return {
    'created operations': routes
      .filter((route) => route.response.status === 201)
      .map(operation)
      .join(', '),
    'rate groups': [
      ...rateGroups
        .filter((group) => group !== 'general')
        .map((group) => `- ${groupTitles[group]}: ${keyed(group).join(', ')}`),
      `- ${groupTitles.general}: every other endpoint that takes an API key`,
    ].join('\n'),
    'tier table': [
      `| tier | ${rateGroups.map((group) => `per minute: ${groupTitles[group]} (service)`).join(' | ')} | per second (edge) | burst (edge) | per day (edge) |`,
      `|---|${rateGroups.map(() => '---|').join('')}---|---|---|`,
      ...Object.entries(tiers).map(
        ([name, tier]) =>
          `| ${name} | ${rateGroups.map((group) => tier.requestsPerMinute[group]).join(' | ')} | ${tier.ratePerSecond} | ${tier.burst} | ${tier.dailyQuota} |`,
      ),
    ].join('\n'),
  };
}

/**
 * The overview with its generated parts filled in and its other comments (notes to the editor) left
 * out. A generated comment the code does not know, or a part the file no longer asks for, throws:
 * the document is built by a test, so neither can ship.
 */
export function renderOverview(
  source: string,
  tiers: TierTable,
  routes: readonly RouteDeclaration[],
): string {
  const parts = generatedParts(tiers, routes);
  const used = new Set<string>();
  const filled = source.replace(/<!--\s*generated:\s*([a-z ]+?)\s*-->/g, (_comment, name: string) => {
    const part = parts[name];
    if (part === undefined) throw new Error(`docs/${API_OVERVIEW_FILE} asks for an unknown part "${name}"`);
    used.add(name);
    return part;
  });
  const unused = Object.keys(parts).filter((name) => !used.has(name));
  if (unused.length) throw new Error(`docs/${API_OVERVIEW_FILE} no longer places "${unused.join('", "')}"`);
  return filled.replace(/<!--[\s\S]*?-->\n?/g, '').trim();
}

export const describeApi = (tiers: TierTable, routes: readonly RouteDeclaration[]): string =>
  renderOverview(readOverviewSource(), tiers, routes);
