import { lookup } from 'node:dns/promises';

/** Every A and AAAA address a hostname resolves to; a port, so tests can map names to addresses. */
export type HostResolver = (hostname: string) => Promise<string[]>;

export const systemResolver: HostResolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);
