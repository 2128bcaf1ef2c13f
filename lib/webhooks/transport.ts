import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIPv6 } from 'node:net';

/** One POST of a signed event, to an address the URL guard has already checked. */
export interface WebhookPost {
  url: URL;
  /** The checked address to connect to, whatever the hostname resolves to by now. */
  address: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

/** The receiver's status, or the class of failure that left none (never a body or a message). */
export type PostResult =
  { status: number } | { error: 'timeout' | 'connection_refused' | 'tls' | 'connection' };

/** The port the dispatcher sends through; the node adapter below is the only one. */
export interface WebhookTransport {
  post(request: WebhookPost): Promise<PostResult>;
}

/**
 * The hostname's lookup answers the checked address only: DNS rebinding (a name that resolved to a
 * public address for the check and resolves to a private one a moment later) cannot move the
 * connection. The hostname itself still goes out as Host and TLS server name, so certificates verify.
 */
const pinnedLookup =
  (address: string): LookupFunction =>
  (_hostname, options, callback) => {
    const family = isIPv6(address) ? 6 : 4;
    if (options.all)
      (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };

function classify(error: unknown): Exclude<PostResult, { status: number }>['error'] {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  const name = error instanceof Error ? error.name : '';
  if (name === 'AbortError' || name === 'TimeoutError' || code === 'ABORT_ERR') return 'timeout';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (/CERT|TLS|SSL/.test(code)) return 'tls';
  return 'connection';
}

/** Node's http(s) client: no redirects followed (a 3xx is a failed attempt), no connection reuse. */
export const nodeTransport: WebhookTransport = {
  post({ url, address, headers, body, timeoutMs }) {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const options: RequestOptions = {
      method: 'POST',
      protocol: url.protocol,
      hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      lookup: pinnedLookup(address),
      agent: false,
      signal: AbortSignal.timeout(timeoutMs),
    };
    return new Promise<PostResult>((resolve) => {
      const outgoing = send(options, (response) => {
        // The status is the answer; the body is read off and dropped so the socket closes.
        response.resume();
        response.on('error', () => undefined);
        resolve({ status: response.statusCode ?? 0 });
      });
      outgoing.on('error', (error) => resolve({ error: classify(error) }));
      outgoing.end(body);
    });
  },
};
