import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { RECEIPT_STYLE_HASH } from '@receipt-service/sdk';

/**
 * The developer console (GET /console): the local stack only, never a deployed route. One page and
 * one script, the script being the console and the SDK (packages/sdk) bundled by esbuild on first
 * request. Everything comes from this origin, under a policy that allows nothing else.
 */
const consoleEntry = fileURLToPath(new URL('./browser/app.ts', import.meta.url));
const sdkEntry = fileURLToPath(new URL('./browser/sdk.ts', import.meta.url));

export const jsPdfOptional = ['html2canvas', 'dompurify', 'canvg'];

const bundles = new Map<string, Promise<string>>();
/** Built on first request; a failed build is not kept, so the next request tries again. */
function bundled(entry: string, globalName?: string): Promise<string> {
  let bundle = bundles.get(entry);
  if (!bundle) {
    // esbuild loads only when the console is first opened, not with every local stack.
    bundle = import('esbuild')
      .then(({ build }) =>
        build({
          entryPoints: [entry],
          bundle: true,
          write: false,
          format: 'iife',
          platform: 'browser',
          target: 'es2022',
          logLevel: 'silent',
          // jsPDF's optional helpers (HTML capture, SVG, sanitising HTML) that renderReceiptPdf never
          // calls: jsPDF imports them on demand only, so left out they cost nothing, and kept in they
          // are 0.9 MB of the bundle's 1.7.
          // bwip-js (the SDK's optional barcode encoder, loaded on demand by the PDF renderer) too: the
          // console's receipts carry no receipt code, and its whole browser build would be 1.7 MB more.
          external: [...jsPdfOptional, 'bwip-js'],
          ...(globalName ? { globalName } : {}),
        }),
      )
      .then((result) => result.outputFiles[0]?.text ?? '');
    bundles.set(entry, bundle);
    bundle.catch(() => bundles.delete(entry));
  }
  return bundle;
}

export const consolePolicy = (nonce: string): string =>
  [
    "default-src 'none'",
    "script-src 'self'",
    // The rendered receipt (an iframe's srcdoc) inherits this policy besides its own: its one style
    // sheet is allowed here by the same hash its own policy names.
    `style-src 'self' 'nonce-${nonce}' '${RECEIPT_STYLE_HASH}'`,
    "img-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');

const securityHeaders = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** The sandbox's intent id: anything else is not passed on. */
const intentId = /^pi_[A-Za-z0-9]{1,255}$/;
const sandboxPaymentMethods = ['pm_card_visa', 'pm_card_chargeDeclined'];

function parseJson(body: string | null): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(body ?? '');
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * POST /console/sandbox/confirm `{ paymentId, paymentMethod }`: what the till does with a gateway_a
 * intent (Stripe.js with the client secret), done here against the gateway sandbox with Stripe's wire
 * call, since the page may not reach another origin. The sandbox then sends its signed event.
 */
async function confirmInSandbox(rawBody: string | null, response: ServerResponse, sandboxUrl: string) {
  const body = parseJson(rawBody);
  const paymentId = typeof body?.paymentId === 'string' ? body.paymentId : '';
  const method = typeof body?.paymentMethod === 'string' ? body.paymentMethod : '';
  if (!intentId.test(paymentId) || !sandboxPaymentMethods.includes(method)) {
    response.writeHead(400, { ...securityHeaders, 'Content-Type': 'application/json' });
    response.end(
      JSON.stringify({ error: `paymentId (pi_…) and one of ${sandboxPaymentMethods.join(', ')}` }),
    );
    return;
  }
  const answer = await fetch(`${sandboxUrl}/v1/payment_intents/${paymentId}/confirm`, {
    method: 'POST',
    headers: {
      Authorization: 'Bearer sk_test_console',
      'Content-Type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ payment_method: method }).toString(),
  });
  const text = await answer.text();
  response.writeHead(answer.status, { ...securityHeaders, 'Content-Type': 'application/json' });
  response.end(text);
}

/** Answers the console's paths; false for any other, which the API routes then handle. */
export async function serveConsole(
  request: IncomingMessage,
  response: ServerResponse,
  url: URL,
  /** The request body, already read by the server; and the gateway sandbox, when the stack runs one. */
  context: { body: string | null; sandboxUrl?: string | undefined } = { body: null },
): Promise<boolean> {
  if (url.pathname === '/console' && request.method === 'GET') {
    const nonce = randomBytes(16).toString('base64');
    response.writeHead(200, {
      ...securityHeaders,
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': consolePolicy(nonce),
    });
    response.end(consolePage(nonce));
    return true;
  }
  // The console, and the SDK alone as the global ReceiptSdk (for trying it from the browser's console).
  const scripts: Record<string, () => Promise<string>> = {
    '/console/app.js': () => bundled(consoleEntry),
    '/console/sdk.js': () => bundled(sdkEntry, 'ReceiptSdk'),
  };
  const script = scripts[url.pathname];
  if (script && request.method === 'GET') {
    const text = await script();
    response.writeHead(200, { ...securityHeaders, 'Content-Type': 'text/javascript; charset=utf-8' });
    response.end(text);
    return true;
  }
  if (url.pathname === '/console/sandbox/confirm' && request.method === 'POST' && context.sandboxUrl) {
    await confirmInSandbox(context.body, response, context.sandboxUrl);
    return true;
  }
  // Where the console's webhook points: the deliveries then show real attempts, answered 204.
  if (url.pathname === '/console/webhook-sink' && request.method === 'POST') {
    response.writeHead(204, securityHeaders);
    response.end();
    return true;
  }
  return false;
}

const styles = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2733; background: #f5f7fa; }
header { background: #1d2733; color: #fff; padding: 12px 24px; }
header h1 { font-size: 18px; margin: 0; }
main { display: grid; grid-template-columns: 340px minmax(0, 1fr); gap: 24px; padding: 24px; }
fieldset { border: 1px solid #cfd6df; border-radius: 6px; margin: 0 0 16px; background: #fff; min-width: 0; }
label { display: block; margin: 8px 0 2px; font-weight: 600; }
input, select { width: 100%; box-sizing: border-box; padding: 6px; font: inherit; }
button { margin-top: 12px; padding: 8px 14px; font: inherit; cursor: pointer; }
.note { color: #5b6776; font-size: 12px; }
.step { background: #fff; border: 1px solid #cfd6df; border-radius: 6px; margin-bottom: 12px; padding: 8px 12px; min-width: 0; }
.step h2 { font-size: 15px; margin: 4px 0; overflow-wrap: anywhere; }
.step.failed { border-color: #c0392b; }
.step.ok h2::before { content: '✓ '; color: #1e8449; }
.step.failed h2::before { content: '✗ '; color: #c0392b; }
.step.unavailable { border-color: #c8a24a; }
.step.unavailable h2::before { content: '– '; color: #8a6d3b; }
.caption { overflow-wrap: anywhere; }
.said { margin: 6px 0; overflow-wrap: anywhere; }
.unavailable, .problem { color: #8a4b08; font-weight: 600; }
pre { background: #f0f3f7; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; max-height: 320px; overflow-y: auto; margin: 4px 0; font-size: 12px; }
.receipt { border: 2px solid #1e8449; }
.receipt iframe { display: block; width: 100%; min-height: 240px; border: 0; border-radius: 6px; background: #f3f4f6; }
details summary { cursor: pointer; margin: 8px 0 4px; color: #1d4f91; font-weight: 600; }
.pdf-link { display: inline-block; margin: 12px 0 0 12px; overflow-wrap: anywhere; }
.status { font-weight: 600; }
.signature { font-weight: 600; color: #1e8449; overflow-wrap: anywhere; }
.signature.problem { color: #a61b1b; }
.presented { font-weight: 600; color: #1e8449; overflow-wrap: anywhere; }
.presented.problem { color: #a61b1b; }
.disclosed { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; margin: 0.5rem 0; }
.disclosed dt { color: #555; }
.disclosed dd { margin: 0; font-weight: 600; }
.step.refused { border-color: #a61b1b; }
.step.refused h2::before { content: '✗ '; color: #a61b1b; }
@media (max-width: 720px) {
  header { padding: 10px 12px; }
  header h1 { font-size: 15px; }
  main { grid-template-columns: minmax(0, 1fr); gap: 12px; padding: 12px 8px; }
  fieldset { margin: 0 0 12px; padding: 8px 10px; }
  input, select { font-size: 16px; }
  #run { width: 100%; }
  .step { padding: 8px; }
  pre { max-height: 240px; font-size: 11px; }
  .pdf-link { margin-left: 0; }
}
`;

function consolePage(nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Receipt service — developer console</title>
<style nonce="${nonce}">${styles}</style>
</head>
<body>
<header><h1>Developer console — the five-step flow against this local stack, then confirm and refund</h1></header>
<main>
<form id="settings" autocomplete="off">
<fieldset>
<legend>API keys</legend>
<p class="note">Kept in this page's memory only: never stored, gone on reload. Make them with
<code>npm run admin -- api-keys create</code>.</p>
<label for="merchantKey">Merchant API key</label>
<input id="merchantKey" type="password" autocomplete="off" spellcheck="false">
<label for="issuerKey">Issuer API key</label>
<input id="issuerKey" type="password" autocomplete="off" spellcheck="false">
</fieldset>
<fieldset>
<legend>Flow</legend>
<label for="path">Decrypt</label>
<select id="path">
<option value="device">On this device (WebCrypto key, opened by the SDK)</option>
<option value="spec">On the server (the specification’s path)</option>
</select>
<label for="algorithm">Device key</label>
<select id="algorithm">
<option value="ECDH-ES+A256KW">P-256 (ECDH-ES+A256KW)</option>
<option value="RSA-OAEP-256">RSA 2048 (RSA-OAEP-256)</option>
</select>
<label for="signature">Merchant signature</label>
<select id="signature">
<option value="EdDSA">Signed with Ed25519 (a key made on this page)</option>
<option value="ES256">Signed with P-256 (a key made on this page)</option>
<option value="none">Not signed</option>
</select>
<label for="credential">Presentable receipt</label>
<select id="credential">
<option value="sd-jwt">Issued at the till as an SD-JWT VC (P-256)</option>
<option value="none">None</option>
</select>
<label for="gateway">Gateway</label>
<select id="gateway">
<option value="gateway_a">gateway_a (Stripe)</option>
<option value="gateway_b">gateway_b (Square)</option>
</select>
<button id="run" type="submit">Run the flow</button>
<p class="note">After the five steps: the payment is confirmed in the gateway sandbox (gateway_a), the
statement line is matched to its receipt, one line is refunded, and the receipt's status and the refund
receipt are shown, rendered by the SDK. A signed receipt is signed at the till with a key made on this
page and checked on this device with the key the service publishes; a copy with its total changed
shows what the device says of a tampered receipt. The device path needs no access token: the key that opens the
receipt never leaves this page. One webhook per page visit, reused by every run, deleted when the page
closes.</p>
</fieldset>
</form>
<section>
<div id="steps"></div>
</section>
</main>
<script src="/console/app.js"></script>
</body>
</html>
`;
}
