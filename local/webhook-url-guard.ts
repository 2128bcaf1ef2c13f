/**
 * The local stack's webhook URL guard: the service's strict guard, plus plain http to loopback, where
 * the local stack's receivers (the console, tests) listen. It lives here, in local/, and reaches the
 * service only through local/stack.ts's wiring: no stage, setting or flag inside lib/ loosens the
 * guard, and infra/bundle-guard.ts refuses any Lambda bundle that contains this file.
 */
import {
  addressesOf,
  addressRange,
  checkWebhookUrl,
  parseWebhookUrl,
  refusedAddress,
  type HostResolver,
  type UrlCheck,
  type WebhookUrlGuard,
} from '../lib/webhooks/url-guard.js';

export const localWebhookUrlGuard =
  (resolve: HostResolver): WebhookUrlGuard =>
  async (url: string): Promise<UrlCheck> => {
    const shape = parseWebhookUrl(url);
    if (!shape.ok) return shape;
    if (shape.url.protocol === 'https:') return checkWebhookUrl(url, resolve);
    const resolved = await addressesOf(shape.host, resolve);
    if (!resolved.ok) return resolved;
    for (const address of resolved.addresses) {
      const range = addressRange(address);
      if (range === 'loopback') continue;
      if (range === 'unicast')
        return { ok: false, reason: 'plain http is allowed only to a loopback address on the local stack' };
      return refusedAddress(address, range);
    }
    return { ok: true, url: shape.url, addresses: resolved.addresses };
  };
