import { lookup } from 'node:dns/promises';

/** Every A and AAAA address a hostname resolves to; a port, so tests can map names to addresses. */
export type HostResolver = (hostname: string) => Promise<string[]>;

export const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

/** The verdict on a webhook URL: where to connect (the checked addresses only), or why not. */
export type UrlCheck = { ok: true; url: URL; addresses: string[] } | { ok: false; reason: string };

/**
 * Judges a webhook URL at registration and before every attempt. The service's own is strict
 * (lib/webhooks/url-guard.ts: https to public addresses); only the local stack's wiring passes another.
 */
export type WebhookUrlGuard = (url: string) => Promise<UrlCheck>;
