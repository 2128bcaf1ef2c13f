import * as routeModule from '../../lib/routes.js';

/**
 * The route table as the bench needs it. lib/routes.ts has exported it as an array `routes` and as a
 * keyed `routes` with a `routeList`; either shape is read, so the bench does not break when it changes.
 */
export interface BenchRoute {
  name: string;
  entry: string;
  /** Reaches a payment gateway (its bundle loads stripe or square on first use). */
  gateways: boolean;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

function toBenchRoute(value: unknown): BenchRoute | null {
  if (!isRecord(value) || typeof value.name !== 'string' || typeof value.entry !== 'string') return null;
  return { name: value.name, entry: value.entry, gateways: value.gateways === true };
}

export function benchRoutes(): BenchRoute[] {
  const exported: Record<string, unknown> = { ...routeModule };
  const { routeList, routes } = exported;
  const candidates: unknown[] = Array.isArray(routeList)
    ? routeList
    : Array.isArray(routes)
      ? routes
      : isRecord(routes)
        ? Object.values(routes)
        : [];
  const list = candidates.map(toBenchRoute).filter((route): route is BenchRoute => route !== null);
  if (list.length === 0) throw new Error('lib/routes.ts exports no route list the bench can read');
  return list;
}
