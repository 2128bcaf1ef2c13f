import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { HostResolver, UrlCheck, WebhookUrlGuard } from '../kernel/dns.js';

export { type HostResolver, systemResolver, type UrlCheck, type WebhookUrlGuard } from '../kernel/dns.js';

export const maxWebhookUrlLength = 2048;

/**
 * What an address is, by ipaddr.js's special-purpose ranges. An IPv6 form that embeds an IPv4 address
 * is judged as that IPv4 address: IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible
 * form (::a.b.c.d, RFC 4291 §2.5.5.1), which ipaddr.js calls plain unicast although a dual-stack host
 * may route it to the IPv4 address. So ::169.254.169.254 is link-local like the address it carries.
 * Anything but public unicast (private, loopback, link-local incl. the metadata address, unique-local,
 * CGNAT, multicast, reserved, NAT64 and tunnel prefixes that can reach inside) is refused: an
 * allow-list, so a range ipaddr.js adds later is refused too.
 */
export function addressRange(address: string): string {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    const compatible = v6.parts.slice(0, 6).every((part) => part === 0);
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
    // ::/96 holds :: and ::1 too; those keep their own names (unspecified, loopback). WHATWG URL
    // spells [::169.254.169.254] as [::a9fe:a9fe], which is how it arrives here.
    else if (compatible && v6.range() === 'unicast')
      parsed = ipaddr.fromByteArray(v6.toByteArray().slice(12));
  }
  return parsed.range();
}

const fail = (reason: string): UrlCheck & { ok: false } => ({ ok: false, reason });

/**
 * The shape every webhook URL must have, wherever it may point: absolute, http(s), no credentials,
 * no fragment, a host, at most maxWebhookUrlLength characters.
 */
export function parseWebhookUrl(
  url: string,
): { ok: true; url: URL; host: string } | (UrlCheck & { ok: false }) {
  if (url.length > maxWebhookUrlLength)
    return fail(`the URL is longer than ${maxWebhookUrlLength} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return fail('not an absolute URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    return fail(`the scheme must be https, not ${parsed.protocol.replace(/:$/, '')}`);
  if (parsed.username !== '' || parsed.password !== '') return fail('the URL must not carry credentials');
  if (parsed.hash !== '') return fail('the URL must not carry a fragment');
  // WHATWG URL has already normalised IPv4 spellings (0x7f.1, 2130706433) to dotted quads.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') return fail('the URL has no host');
  return { ok: true, url: parsed, host };
}

/** The addresses a URL's host is or resolves to, each a valid IP address. */
export async function addressesOf(
  host: string,
  resolve: HostResolver,
): Promise<{ ok: true; addresses: string[] } | (UrlCheck & { ok: false })> {
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch {
      return fail(`the host ${host} does not resolve`);
    }
    if (addresses.length === 0) return fail(`the host ${host} does not resolve`);
  }
  const invalid = addresses.find((address) => !ipaddr.isValid(address));
  if (invalid !== undefined) return fail('the host resolves to something that is not an IP address');
  return { ok: true, addresses };
}

/**
 * The refusal for an address outside public unicast: it names the rule and the range, never the
 * address (a resolved one would tell a caller what a name means inside someone's network).
 */
export const refusedAddress = (_address: string, range: string): UrlCheck =>
  fail(
    `the host is or resolves to a ${describeRange(range)} address: webhooks are sent to public unicast addresses only`,
  );

/**
 * Whether a webhook may be sent to `url`: https, and every address the host is or resolves to public
 * unicast. Checked at registration and again before every delivery, where the caller connects to the
 * returned addresses only (so a name that re-resolves elsewhere between the check and the connection
 * is not followed). Nothing here loosens it: no stage, setting or flag of the service does.
 */
export async function checkWebhookUrl(url: string, resolve: HostResolver): Promise<UrlCheck> {
  const shape = parseWebhookUrl(url);
  if (!shape.ok) return shape;
  if (shape.url.protocol !== 'https:') return fail('the scheme must be https');
  const resolved = await addressesOf(shape.host, resolve);
  if (!resolved.ok) return resolved;
  for (const address of resolved.addresses) {
    const range = addressRange(address);
    if (range !== 'unicast') return refusedAddress(address, range);
  }
  return { ok: true, url: shape.url, addresses: resolved.addresses };
}

/** The guard a process uses: the one its wiring passed (the local stack's), or the strict one. */
export const webhookUrlGuardOf = (deps: {
  resolveHost: HostResolver;
  webhookUrlGuard?: WebhookUrlGuard | undefined;
}): WebhookUrlGuard => deps.webhookUrlGuard ?? ((url) => checkWebhookUrl(url, deps.resolveHost));

const rangeNames: Record<string, string> = {
  private: 'private',
  loopback: 'loopback',
  linkLocal: 'link-local',
  uniqueLocal: 'unique-local',
  carrierGradeNat: 'carrier-grade NAT',
  unspecified: 'unspecified',
  multicast: 'multicast',
  broadcast: 'broadcast',
  reserved: 'reserved',
};

const describeRange = (range: string): string => rangeNames[range] ?? `special-purpose (${range})`;
