import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { HostResolver } from '../kernel/dns.js';

export { type HostResolver, systemResolver } from '../kernel/dns.js';

export interface UrlPolicy {
  /** The local stack's receivers listen on 127.0.0.1 over plain http; nowhere else may a URL do that. */
  allowLoopbackHttp: boolean;
  resolve: HostResolver;
}

export type UrlCheck = { ok: true; url: URL; addresses: string[] } | { ok: false; reason: string };

export const maxWebhookUrlLength = 2048;

/**
 * What an address is, by ipaddr.js's special-purpose ranges. An IPv6 form that embeds an IPv4 address
 * (::ffff:a.b.c.d) is judged as that IPv4 address, so ::ffff:169.254.169.254 is link-local like the
 * address it maps. Anything but public unicast (private, loopback, link-local incl. the metadata
 * address, unique-local, CGNAT, multicast, reserved, NAT64 and tunnel prefixes that can reach inside)
 * is refused: an allow-list, so a range ipaddr.js adds later is refused too.
 */
export function addressRange(address: string): string {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range();
}

const fail = (reason: string): UrlCheck => ({ ok: false, reason });

/**
 * Whether a webhook may be sent to `url`: checked at registration and again before every delivery,
 * where the caller connects to the returned addresses only (so a name that re-resolves elsewhere
 * between the check and the connection is not followed).
 */
export async function checkWebhookUrl(url: string, policy: UrlPolicy): Promise<UrlCheck> {
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
  const plainHttp = parsed.protocol === 'http:';
  if (plainHttp && !policy.allowLoopbackHttp) return fail('the scheme must be https');

  // WHATWG URL has already normalised IPv4 spellings (0x7f.1, 2130706433) to dotted quads.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') return fail('the URL has no host');
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await policy.resolve(host);
    } catch {
      return fail(`the host ${host} does not resolve`);
    }
    if (addresses.length === 0) return fail(`the host ${host} does not resolve`);
  }

  for (const address of addresses) {
    if (!ipaddr.isValid(address)) return fail(`the host resolves to ${address}, which is not an IP address`);
    const range = addressRange(address);
    if (range === 'unicast') {
      if (plainHttp) return fail('plain http is allowed only to a loopback address on the local stack');
      continue;
    }
    if (range === 'loopback' && plainHttp && policy.allowLoopbackHttp) continue;
    return fail(`the host is or resolves to a ${describeRange(range)} address (${address})`);
  }
  return { ok: true, url: parsed, addresses };
}

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
