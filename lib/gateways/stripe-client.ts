/**
 * The one place besides lib/gateways/stripe.ts that touches the Stripe SDK (an import boundary that
 * `npm run lint` enforces): loading it on first use, and building a client.
 */
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type Stripe from 'stripe';
import type { Timeouts } from '../kernel/clock.js';

export type StripeSdk = typeof import('stripe');

/** Dynamic, so cold starts that never take a payment never load the SDK. */
export const loadStripeSdk = (): Promise<StripeSdk> => import('stripe');

export interface StripeClientOptions {
  secretKey: string;
  /** A Stripe-compatible API at another address (a local test double); unset: api.stripe.com. */
  baseUrl?: string;
  maxNetworkRetries: number;
  /** The SDK's own timeout per attempt (`attempts` may end an attempt sooner). */
  timeoutMs: number;
  /**
   * Each attempt, its answer's body included, ended after `ms` of `timeouts`' time (a test's clock,
   * or the system's timers); unset: the SDK's own client and timeout alone.
   */
  attempts?: { timeouts: Timeouts; ms: number };
}

export function createStripeClient(sdk: StripeSdk, options: StripeClientOptions): Stripe {
  const common = {
    maxNetworkRetries: options.maxNetworkRetries,
    timeout: options.timeoutMs,
    ...(options.attempts
      ? { httpClient: timedNodeHttpClient(sdk, options.attempts.timeouts, options.attempts.ms) }
      : {}),
  };
  if (options.baseUrl === undefined) return new sdk.default(options.secretKey, common);
  const url = new URL(options.baseUrl);
  const protocol = url.protocol === 'https:' ? 'https' : 'http';
  return new sdk.default(options.secretKey, {
    ...common,
    host: url.hostname,
    port: url.port || (protocol === 'https' ? 443 : 80),
    protocol,
  });
}

/**
 * Stripe's requests over node:http, as the SDK's own Node client sends them, each attempt ended after
 * `ms` of `timeouts`' time with the answer's body read under the same deadline, so a body that stalls
 * times out as a silent server does. The SDK sees a timed-out attempt as its own timeout (its
 * timeout error, retried under the same idempotency key). Not the SDK's fetch client: fetch (undici
 * and web streams) cost ~0.25 ms of CPU more per call than node:http (docs/PERFORMANCE.md, "CPU per
 * request, fifth round"), and the SDK's own Node client times out only an idle socket, on its own timer.
 */
function timedNodeHttpClient(sdk: StripeSdk, timeouts: Timeouts, ms: number): Stripe.HttpClient {
  const { HttpClient, HttpClientResponse } = sdk.default;
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  /** An answer read whole within the attempt's deadline. */
  class ReadResponse extends HttpClientResponse {
    constructor(
      private readonly raw: IncomingMessage,
      private readonly body: string,
    ) {
      super(raw.statusCode ?? 0, raw.headers as ConstructorParameters<typeof HttpClientResponse>[1]);
    }
    override getRawResponse(): IncomingMessage {
      return this.raw;
    }
    override toStream(streamCompleteCallback: () => void): Readable {
      const stream = Readable.from([this.body]);
      stream.once('end', () => streamCompleteCallback());
      return stream;
    }
    override toJSON(): Promise<unknown> {
      return new Promise((resolve) => resolve(this._parseResponseBody(this.body)));
    }
  }

  class TimedNodeHttpClient extends HttpClient {
    override getClientName(): string {
      return 'node';
    }
    override makeRequest(
      host: string,
      port: string,
      path: string,
      method: string,
      headers: Parameters<Stripe.HttpClient['makeRequest']>[4],
      requestData: string,
      protocol: string,
      timeout: number,
    ): Promise<ReadResponse> {
      const insecure = protocol === 'http';
      const deadline = timeouts.timeout(ms);
      return new Promise<ReadResponse>((resolve, reject) => {
        const request = (insecure ? http : https).request({
          host,
          port,
          path,
          method,
          agent: insecure ? agents.http : agents.https,
          headers: headers as http.OutgoingHttpHeaders,
          ciphers: 'DEFAULT:!aNULL:!eNULL:!LOW:!EXPORT:!SSLv2:!MD5',
        });
        // The first failure settles the attempt: a timeout stays the SDK's timeout error even though
        // destroying the request then also ends its answer with a reset.
        const fail = (error: Error) => {
          reject(error);
          request.destroy(error);
        };
        const timedOut = () => fail(HttpClient.makeTimeoutError());
        if (deadline.signal.aborted) timedOut();
        else deadline.signal.addEventListener('abort', timedOut, { once: true });
        // The SDK's own timeout, a backstop (lib/gateways/registry.ts's sdkBackstopMs).
        request.setTimeout(timeout, timedOut);
        // `on`, not `once`: an 'error' after the first (a destroy racing a reset) must not go unheard.
        request.on('error', reject);
        request.once('response', (response) => {
          response.setEncoding('utf8');
          let body = '';
          response.on('data', (chunk: string) => (body += chunk));
          response.on('error', fail);
          // A body cut short without an error (the connection closed before its end) fails too.
          response.once('close', () => {
            if (!response.complete) fail(new Error('the answer ended before its body did'));
          });
          response.once('end', () => resolve(new ReadResponse(response, body)));
        });
        request.end(requestData);
      }).finally(() => deadline.clear());
    }
  }
  return new TimedNodeHttpClient();
}
