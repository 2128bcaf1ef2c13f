import {
  generateDeviceKey,
  generateSigningKey,
  openEnvelope,
  renderReceiptHtml,
  signKeyProof,
  signReceipt,
  toCsv,
  toDigitalReceipt,
  toRefundReceipt,
  toSchemaOrgOrder,
  toUblInvoice,
  toVersaReceipt,
  toVReceipt,
  type DigitalReceipt12,
  type UblBuyer,
  verifyReceiptSignature,
  type DeviceKey,
  type FlattenedReceipt,
  type KeyWrapAlgorithm,
  type MerchantSignature,
  type Receipt,
  type RefundRequest,
  type SigningAlgorithm,
  type SigningKey,
} from '@receipt-service/sdk';
import { renderReceiptPdf } from '@receipt-service/sdk/pdf';
import {
  issueReceiptCredential,
  presentableReceiptClaims,
  presentReceipt,
  RECEIPT_PRESENTATION_BASICS,
  VRECEIPT_CLAIM_LABELS,
  verifyReceiptPresentation,
} from '@receipt-service/sdk/credential';

/**
 * The console's script: runs the flow step by step against this origin and shows every request
 * and response. API keys and private keys live in this closure only: nothing is written to
 * localStorage, cookies or IndexedDB, and a reload forgets them. sessionStorage holds one thing,
 * the id of this visit's webhook (not a key, not a secret), so a reload can find that webhook again.
 */
type Json = Record<string, unknown>;
interface Reply {
  status: number;
  body: unknown;
}
interface ApiKey {
  name: string;
  value: string;
}

const element = <T extends HTMLElement>(id: string): T => {
  const found = document.getElementById(id);
  if (!found) throw new Error(`missing #${id}`);
  return found as T;
};

const api = '/api/v1';
const steps = element<HTMLDivElement>('steps');

/** Shows secrets as what they are, never their value. */
function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) =>
        (key === 'privateKey' || key === 'secret') && typeof inner === 'string'
          ? [
              key,
              `(${key === 'secret' ? 'signing secret' : 'private key'}, ${inner.length} characters, not shown)`,
            ]
          : [key, redact(inner)],
      ),
    );
  }
  return value;
}

const shown = (value: unknown): string =>
  typeof value === 'string' ? value : JSON.stringify(redact(value), null, 2);

interface Step {
  section: HTMLElement;
  log(label: string, value: unknown): void;
  /** A line of plain text (no code box). */
  say(text: string, className?: string): HTMLElement;
}

function addStep(title: string): Step {
  const section = document.createElement('div');
  section.className = 'step';
  const heading = document.createElement('h2');
  heading.textContent = title;
  section.append(heading);
  steps.append(section);
  return {
    section,
    log(label, value) {
      const caption = document.createElement('div');
      caption.className = 'caption';
      caption.textContent = label;
      const pre = document.createElement('pre');
      pre.textContent = shown(value);
      section.append(caption, pre);
    },
    say(text, className) {
      const line = document.createElement('p');
      line.className = className ?? 'said';
      line.textContent = text;
      section.append(line);
      return line;
    },
  };
}

async function send(
  method: string,
  path: string,
  apiKey: ApiKey,
  body?: Json,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      'X-API-Key': apiKey.value,
      ...(body ? { 'Content-Type': 'application/json' } : {}),
      ...headers,
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Shown as text.
  }
  return { status: response.status, body: parsed };
}

/** A request shown as a step: what was sent (the key as its name only) and what came back. */
async function call(
  title: string,
  method: string,
  path: string,
  apiKey: ApiKey,
  body?: Json,
  headers: Record<string, string> = {},
): Promise<Reply & { step: Step }> {
  const step = addStep(title);
  const shownHeaders = Object.entries(headers)
    .map(([name, value]) => `   ${name}: ${value}`)
    .join('');
  step.log(
    `→ ${method} ${api}${path}   X-API-Key: •••• (${apiKey.name})${shownHeaders}`,
    body ?? '(no body)',
  );
  const reply = await send(method, path, apiKey, body, headers);
  step.log(`← ${reply.status}`, reply.body);
  step.section.classList.add(reply.status < 300 ? 'ok' : 'failed');
  return { ...reply, step };
}

const dataOf = (reply: Reply, title: string): Json => {
  const data = (reply.body as { data?: Json } | null)?.data;
  if (reply.status >= 300 || !data) throw new Error(`${title} answered ${reply.status}`);
  return data;
};

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

function testCard(): string {
  const digits = crypto.getRandomValues(new Uint32Array(3));
  return `4242${[...digits].map((value) => String(value % 10000).padStart(4, '0')).join('')}`;
}

/*
 * This visit's webhook. One per page visit: made by the first run, reused by every later run, and
 * deleted when the page goes away (pagehide, which also fires on a reload: the page cannot tell the
 * two apart). Its id is kept in sessionStorage, which belongs to this tab and survives a reload, so
 * a webhook whose delete never got through (the browser was killed, the network was gone) is found
 * again by the next run after a reload, by its id and this console's receiver URL, and reused.
 */
const WEBHOOK_SLOT = 'receipt-console.webhookId';
const receiverUrl = `${location.origin}/console/webhook-sink`;
let webhook: { webhookId: string; owner: ApiKey } | undefined;

interface ListedWebhook {
  webhookId: string;
  url: string;
}

async function visitWebhook(issuer: ApiKey): Promise<string | undefined> {
  if (webhook && webhook.owner.value === issuer.value) {
    const step = addStep('Webhook: this visit’s, registered by an earlier run');
    step.say(`Reusing ${webhook.webhookId}: one webhook per page visit, deleted when the page closes.`);
    step.section.classList.add('ok');
    return webhook.webhookId;
  }
  // Another issuer key typed in since: its webhook is this visit's now; the old one goes.
  if (webhook) await dropWebhook();
  const remembered = sessionStorage.getItem(WEBHOOK_SLOT);
  if (remembered) {
    const listed = await call('Webhook: look for this visit’s (after a reload)', 'GET', '/webhooks', issuer);
    const found = ((listed.body as { data?: { webhooks?: ListedWebhook[] } }).data?.webhooks ?? []).find(
      (candidate) => candidate.webhookId === remembered && candidate.url === receiverUrl,
    );
    if (found) {
      listed.step.say(`Found ${found.webhookId} still registered: reused, not registered again.`);
      webhook = { webhookId: found.webhookId, owner: issuer };
      return found.webhookId;
    }
    listed.step.say('Not there any more (deleted when the page closed): a new one is registered.');
    sessionStorage.removeItem(WEBHOOK_SLOT);
  }
  const created = await call(
    'Webhook: receipt.available and receipt.updated to this console',
    'POST',
    '/webhooks',
    issuer,
    { url: receiverUrl, events: ['receipt.available', 'receipt.updated'] },
  );
  // Its failure does not stop the flow: the receipt is still made, nobody hears of it.
  if (created.status >= 300) return undefined;
  const webhookId = dataOf(created, 'webhook').webhookId as string;
  webhook = { webhookId, owner: issuer };
  sessionStorage.setItem(WEBHOOK_SLOT, webhookId);
  created.step.say('Kept for this page visit and deleted when the page closes.');
  return webhookId;
}

/** Deletes this visit's webhook. keepalive lets the request outlive the page that sends it. */
async function dropWebhook(): Promise<void> {
  if (!webhook) return;
  const { webhookId, owner } = webhook;
  webhook = undefined;
  await fetch(`${api}/webhooks/${encodeURIComponent(webhookId)}`, {
    method: 'DELETE',
    headers: { 'X-API-Key': owner.value },
    keepalive: true,
  }).catch(() => undefined);
}

// DELETE cannot go by sendBeacon (POST only): a keepalive fetch is the way a leaving page sends it.
// A navigation away waits for this handler; a closing tab gives it Chromium's unload timeout (about
// 500 ms) and then goes without it, so on a busy machine a closed tab can leave its webhook behind,
// as a killed browser does.
addEventListener('pagehide', () => void dropWebhook());

/*
 * The merchant's signing keys: made in this page with WebCrypto (the private key cannot be read out)
 * and kept as a till keeps them, in this origin's IndexedDB (a CryptoKey is stored as itself, still
 * not extractable), by a hash of the merchant API key: once a merchant has a key, adding another needs
 * a proof by it (Key-Change-Proof), so a page that forgot its keys could not add one.
 */
let signing: { key: SigningKey; owner: ApiKey } | undefined;

async function keyStore(): Promise<IDBDatabase> {
  const opening = indexedDB.open('receipt-console', 1);
  opening.onupgradeneeded = () => opening.result.createObjectStore('signing-keys');
  return new Promise((resolve, reject) => {
    opening.onsuccess = () => resolve(opening.result);
    opening.onerror = () => reject(opening.error ?? new Error('IndexedDB did not open'));
  });
}

const ownerId = async (owner: ApiKey): Promise<string> =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(owner.value)))]
    .map((byte) => byte.toString(16).padStart(2, '0'))
    .join('');

async function storedKeys(owner: ApiKey): Promise<SigningKey[]> {
  const [db, id] = await Promise.all([keyStore(), ownerId(owner)]);
  const read = db.transaction('signing-keys').objectStore('signing-keys').get(id);
  return new Promise((resolve, reject) => {
    read.onsuccess = () => resolve((read.result as SigningKey[] | undefined) ?? []);
    read.onerror = () => reject(read.error ?? new Error('IndexedDB read failed'));
  });
}

async function storeKey(owner: ApiKey, key: SigningKey): Promise<void> {
  const [db, id, held] = await Promise.all([keyStore(), ownerId(owner), storedKeys(owner)]);
  const write = db
    .transaction('signing-keys', 'readwrite')
    .objectStore('signing-keys')
    .put([...held, key], id);
  await new Promise<void>((resolve, reject) => {
    write.onsuccess = () => resolve();
    write.onerror = () => reject(write.error ?? new Error('IndexedDB write failed'));
  });
}

async function merchantSigningKey(merchant: ApiKey, algorithm: SigningAlgorithm): Promise<SigningKey> {
  if (!signing || signing.owner.value !== merchant.value || signing.key.algorithm !== algorithm) {
    const kept = (await storedKeys(merchant)).find((held) => held.algorithm === algorithm);
    if (kept) signing = { key: kept, owner: merchant };
  }
  if (signing && signing.owner.value === merchant.value && signing.key.algorithm === algorithm) {
    const step = addStep(`Merchant signing key: this visit’s (${algorithm}, kid ${signing.key.kid})`);
    step.section.classList.add('ok');
    return signing.key;
  }
  const step = addStep(`Merchant signing key made on this page (WebCrypto, ${algorithm})`);
  const key = await generateSigningKey({ algorithm });
  step.log('public JWK; the private key is a non-extractable CryptoKey that stays in this page', {
    publicJwk: key.publicJwk,
    kid: key.kid,
    privateKeyExtractable: key.privateKey.extractable,
  });
  step.section.classList.add('ok');
  // Registering proves possession: the new key signs a fresh challenge; a merchant that already has a
  // key (this visit's other algorithm) proves the addition with that key too.
  const [previous] = await storedKeys(merchant);
  const challenge = async () =>
    dataOf(
      await call('A challenge for the key proof', 'POST', '/merchants/signing-keys/challenges', merchant),
      'create-key-challenge',
    ) as { nonce: string; clientId: string };
  const { nonce, clientId } = await challenge();
  clientIds.set(merchant.value, clientId);
  const proof = await signKeyProof(
    { action: 'register', clientId, kid: key.kid, nonce },
    key.privateKey,
    key.kid,
  );
  const headers: Record<string, string> = {};
  if (previous) {
    const change = await challenge();
    headers['Key-Change-Proof'] = await signKeyProof(
      { action: 'add-key', clientId, target: key.kid, nonce: change.nonce },
      previous.privateKey,
      previous.kid,
    );
  }
  const registered = dataOf(
    await call(
      'Register the signing key',
      'POST',
      '/merchants/signing-keys',
      merchant,
      { publicKey: key.publicJwk, proof },
      headers,
    ),
    'register-signing-key',
  );
  if (registered.kid !== key.kid) throw new Error('the service named the key otherwise than its thumbprint');
  await storeKey(merchant, key);
  signing = { key, owner: merchant };
  return key;
}

/**
 * The device's check of a receipt's merchant signature, with the key the service publishes under its
 * kid: verified, or refused with the reason. The service cannot make this pass for a receipt the
 * merchant did not sign.
 */
async function checkSignature(
  step: Step,
  receipt: Receipt & { merchantSignature?: MerchantSignature },
  issuer: ApiKey,
): Promise<void> {
  const line = step.say('', 'signature');
  // Right under the title, where a reader looks first.
  step.section.querySelector('h2')?.after(line);
  const sealed = receipt.merchantSignature;
  if (!sealed) {
    line.textContent = 'not signed by the merchant';
    line.dataset.signature = 'unsigned';
    return;
  }
  const fetched = await send('GET', `/merchant-keys/${encodeURIComponent(sealed.kid)}`, issuer);
  const publicKey = (fetched.body as { data?: { publicKey?: Record<string, string> } }).data?.publicKey;
  try {
    if (!publicKey) throw new Error(`GET /merchant-keys/${sealed.kid} answered ${fetched.status}`);
    const { kid } = await verifyReceiptSignature(receipt, publicKey);
    line.textContent = `signed by ${receipt.merchant.name} (kid ${kid}), verified on this device`;
    line.dataset.signature = 'verified';
  } catch (error) {
    line.textContent = `not verified: ${error instanceof Error ? error.message : String(error)}`;
    line.dataset.signature = 'refused';
    line.classList.add('problem');
    step.section.classList.replace('ok', 'refused');
  }
}

/** Each merchant API key's client id, as a key challenge names it: a credential's issuer is its JWKS URL. */
const clientIds = new Map<string, string>();

async function merchantClientId(merchant: ApiKey): Promise<string> {
  const known = clientIds.get(merchant.value);
  if (known) return known;
  const { clientId } = dataOf(
    await call(
      'Which merchant client this is (a key challenge names it)',
      'POST',
      '/merchants/signing-keys/challenges',
      merchant,
    ),
    'create-key-challenge',
  ) as { clientId: string };
  clientIds.set(merchant.value, clientId);
  return clientId;
}

/** The ds011 groups have no wallet label of their own; these name them for a reader. */
const GROUP_LABELS: Record<string, string> = {
  PurchaseReceipt: 'Receipt',
  MonetaryTotal: 'Totals',
  TaxTotal: 'VAT',
  Party: 'Seller',
  PurchaseReceiptLine: 'Every line (how many, too)',
  CardAccount: 'Card',
  Payment: 'Payment and its transaction',
};

const claimLabel = (path: string): string =>
  GROUP_LABELS[path] ??
  VRECEIPT_CLAIM_LABELS[path.replace(/\.\d+(?=\.|$)/g, '')] ??
  VRECEIPT_CLAIM_LABELS[`${path}.name`] ??
  path;

/**
 * The cardholder's presentation of the sealed credential: merchant, date and total only, checked here
 * as a warranty desk would (verifyReceiptPresentation, with the key the service publishes under the
 * credential's kid), and the list of what it hides: each claim left out whose group is not left out whole.
 */
async function showPresentation(credential: string, issuer: ApiKey): Promise<void> {
  const step = addStep('The receipt presented: merchant, date and total only (SD-JWT VC, presentReceipt)');
  step.section.id = 'presentation';
  const presentation = await presentReceipt(credential, RECEIPT_PRESENTATION_BASICS);
  const encodedHeader = credential.slice(0, credential.indexOf('.'));
  const { kid } = JSON.parse(atob(encodedHeader.replace(/-/g, '+').replace(/_/g, '/'))) as { kid: string };
  const fetched = await send('GET', `/merchant-keys/${encodeURIComponent(kid)}`, issuer);
  const publicKey = (
    fetched.body as { data?: { publicKey?: { kty: string; crv?: string; x?: string; y?: string } } }
  ).data?.publicKey;
  const line = step.say('', 'presented');
  try {
    if (!publicKey) throw new Error(`GET /merchant-keys/${kid} answered ${fetched.status}`);
    const verified = await verifyReceiptPresentation(presentation, {
      keys: [{ ...publicKey, kid, alg: 'ES256', use: 'sig' }],
    });
    line.textContent = `issued by the merchant's key ${verified.kid}, verified on this device`;
    line.dataset.presentation = 'verified';
    const shownClaims = document.createElement('dl');
    shownClaims.className = 'disclosed';
    const { Party, PurchaseReceipt, MonetaryTotal } = verified.claims;
    for (const [path, value] of [
      ['Party.partyName_', Party?.partyName_?.name],
      ['PurchaseReceipt.issueDate', PurchaseReceipt?.issueDate],
      [
        'MonetaryTotal.payableAmount',
        `${String(MonetaryTotal?.payableAmount)} ${String(PurchaseReceipt?.documentCurrencyCode)}`,
      ],
    ] as const) {
      const term = document.createElement('dt');
      term.textContent = claimLabel(path);
      const definition = document.createElement('dd');
      definition.textContent = String(value);
      definition.dataset.claim = path;
      shownClaims.append(term, definition);
    }
    const disclosed = new Set(verified.disclosed);
    const hiddenPaths = (await presentableReceiptClaims(credential)).filter((path) => !disclosed.has(path));
    const hidden = new Set(hiddenPaths);
    const topmost = hiddenPaths.filter((path) => {
      const parent = path.slice(0, Math.max(path.lastIndexOf('.'), 0));
      return parent === '' || !hidden.has(parent);
    });
    step.say(`It hides ${topmost.length} claims (${hiddenPaths.length} disclosures left out):`);
    const list = document.createElement('ul');
    list.className = 'hidden-claims';
    for (const path of topmost) {
      const item = document.createElement('li');
      item.textContent = `${claimLabel(path)} (${path})`;
      item.dataset.claim = path;
      list.append(item);
    }
    step.section.append(shownClaims, list);
    step.log(
      `The presentation (${presentation.length} characters, ${disclosed.size} disclosures)`,
      presentation,
    );
    step.section.classList.add('ok');
  } catch (error) {
    line.textContent = `not verified: ${error instanceof Error ? error.message : String(error)}`;
    line.dataset.presentation = 'refused';
    line.classList.add('problem');
    step.section.classList.add('refused');
  }
}

/** A receipt as a person reads it: rendered by the SDK, the JSON and a PDF one click away. */
function showReceipt(title: string, id: string, receipt: Receipt): Step {
  const step = addStep(title);
  step.section.id = id;
  step.section.classList.add('ok', 'receipt');
  const frame = document.createElement('iframe');
  frame.title = title;
  // No scripts and no navigation in the receipt; same origin only so this page can size the frame.
  // The document carries its own Content-Security-Policy, which applies inside the frame.
  frame.setAttribute('sandbox', 'allow-same-origin');
  frame.srcdoc = renderReceiptHtml(receipt);
  frame.addEventListener('load', () => {
    const height = frame.contentDocument?.documentElement.scrollHeight;
    if (height) frame.style.height = `${height}px`;
    frame.dataset.loaded = 'true';
  });
  step.section.append(frame);

  const raw = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = 'Raw JSON';
  const pre = document.createElement('pre');
  pre.textContent = shown(receipt);
  raw.append(summary, pre);

  const pdf = document.createElement('button');
  pdf.type = 'button';
  pdf.className = 'pdf';
  pdf.textContent = 'Download PDF';
  pdf.addEventListener('click', () => {
    pdf.disabled = true;
    renderReceiptPdf(receipt)
      .then((bytes) => {
        const link = document.createElement('a');
        link.href = URL.createObjectURL(new Blob([bytes as BlobPart], { type: 'application/pdf' }));
        link.download = `receipt-${receipt.receiptId}.pdf`;
        link.textContent = `receipt-${receipt.receiptId}.pdf (${(bytes.length / 1024).toFixed(1)} KB)`;
        link.className = 'pdf-link';
        pdf.after(link);
        link.click();
      })
      .catch((error: unknown) => step.say(`PDF failed: ${String(error)}`, 'problem'))
      .finally(() => {
        pdf.disabled = false;
      });
  });
  step.section.append(raw, pdf, exportsOf(step, receipt));
  return step;
}

/**
 * The buyer an invoice is addressed to: the issuer's business cardholder, as its expense tool would
 * give it (a demo company here; an app takes it from the cardholder's profile).
 */
const DEMO_BUYER: UblBuyer = {
  name: 'Acme Consulting Inc.',
  endpoint: { scheme: '0060', id: '987654321' },
  address: { country: 'US' },
  reference: 'EXP-2026-0042',
};

/**
 * The standard-format exports of an opened receipt (docs/FORMATS.md), each a download made here,
 * where the receipt is open: the service never sees one. A format the receipt lacks a field for says
 * which (ReceiptFormatError) instead of a file.
 */
function exportsOf(step: Step, receipt: Receipt): HTMLElement {
  const opened = receipt as unknown as DigitalReceipt12;
  const credit = receipt.type === 'refund';
  const formats: { id: string; label: string; type: string; file: string; make: () => string }[] = [
    {
      id: 'ubl',
      label: credit ? 'UBL credit note' : 'UBL invoice',
      type: 'application/xml',
      file: 'xml',
      make: () => toUblInvoice(opened, { buyer: DEMO_BUYER }),
    },
    {
      id: 'vreceipt',
      label: 'vReceipt claims',
      type: 'application/json',
      file: 'vreceipt.json',
      make: () => JSON.stringify(toVReceipt(opened), null, 2),
    },
    {
      id: 'versa',
      label: 'Versa',
      type: 'application/json',
      file: 'versa.json',
      make: () => JSON.stringify(toVersaReceipt(opened), null, 2),
    },
    {
      id: 'schema-org',
      label: 'schema.org Order',
      type: 'application/ld+json',
      file: 'jsonld',
      make: () => JSON.stringify(toSchemaOrgOrder(opened), null, 2),
    },
    { id: 'csv', label: 'CSV', type: 'text/csv', file: 'csv', make: () => toCsv([opened]) },
  ];
  const box = document.createElement('div');
  box.className = 'exports';
  for (const format of formats) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = `export export-${format.id}`;
    button.textContent = `Download ${format.label}`;
    button.addEventListener('click', () => {
      let text: string;
      try {
        text = format.make();
      } catch (error) {
        step.say(`${format.label}: ${error instanceof Error ? error.message : String(error)}`, 'problem');
        return;
      }
      const link = document.createElement('a');
      link.href = URL.createObjectURL(new Blob([text], { type: format.type }));
      link.download = `${credit ? 'credit-note' : 'receipt'}-${receipt.receiptId}.${format.file}`;
      link.textContent = link.download;
      link.className = `export-link export-link-${format.id}`;
      button.after(link);
      link.click();
    });
    box.append(button);
  }
  return box;
}

/**
 * The issuer's view: the card transaction on the user's statement, matched to receipts (by its
 * authorization code when the receipt carries the network's references). The match
 * endpoint is newer than some services this console may run against: a 404 there says so.
 */
async function matchStatementLine(issuer: ApiKey, userId: string, receipt: Receipt): Promise<void> {
  const reference = `ledger-${receipt.receiptId.slice(0, 8)}`;
  const path = `/users/${userId}/receipts/match`;
  const body = {
    transactions: [
      {
        reference,
        amount: receipt.summary.total,
        currency: receipt.summary.currency,
        // The issuer's ledger holds the authorization code it gave: a line named by it finds its own
        // receipt even beside a same-amount sale of the same minute. Without one, amount and time.
        ...(receipt.cardTransaction?.authorizationCode
          ? { authorizationCode: receipt.cardTransaction.authorizationCode }
          : { transactionDate: receipt.transaction.datetime }),
        ...(receipt.transaction.cardDetails?.last4
          ? { cardLast4: receipt.transaction.cardDetails.last4 }
          : {}),
      },
    ],
  };
  const step = addStep('Match the statement line to its receipt (the issuer’s view)');
  step.section.id = 'match';
  step.log(`→ POST ${api}${path}   X-API-Key: •••• (issuer)`, body);
  const reply = await send('POST', path, issuer, body);
  step.log(`← ${reply.status}`, reply.body);
  if (reply.status === 404) {
    step.say('match is not available on this service', 'unavailable');
    step.section.classList.add('unavailable');
    step.section.dataset.match = 'unavailable';
    return;
  }
  if (reply.status >= 300) {
    step.section.classList.add('failed');
    throw new Error(`match answered ${reply.status}`);
  }
  const matches =
    (reply.body as { data?: { matches?: { reference: string; receiptIds: string[] }[] } }).data?.matches ??
    [];
  const line = matches.find((match) => match.reference === reference);
  const found = line?.receiptIds.includes(receipt.receiptId) ?? false;
  step.say(
    found
      ? `Statement line ${reference} → receipt ${receipt.receiptId}`
      : `Statement line ${reference}: no receipt matched`,
  );
  step.section.dataset.match = found ? 'found' : 'none';
  step.section.classList.add('ok');
}

async function runFlow(): Promise<void> {
  steps.replaceChildren();
  delete steps.dataset.done;
  const merchant = { name: 'merchant', value: element<HTMLInputElement>('merchantKey').value.trim() };
  const issuer = { name: 'issuer', value: element<HTMLInputElement>('issuerKey').value.trim() };
  const path = element<HTMLSelectElement>('path').value as 'device' | 'spec';
  const algorithm = element<HTMLSelectElement>('algorithm').value as KeyWrapAlgorithm;
  const gateway = element<HTMLSelectElement>('gateway').value;
  const signWith = element<HTMLSelectElement>('signature').value as SigningAlgorithm | 'none';

  // Webhook first, so the receipt below raises a delivery.
  const webhookId = await visitWebhook(issuer);
  const signingKey = signWith === 'none' ? undefined : await merchantSigningKey(merchant, signWith);
  // A presentable receipt is an SD-JWT VC signed ES256: by the signing key when it is P-256, else by one made for it.
  const presentable = element<HTMLSelectElement>('credential').value === 'sd-jwt';
  const credentialKey = !presentable
    ? undefined
    : signingKey?.algorithm === 'ES256'
      ? signingKey
      : await merchantSigningKey(merchant, 'ES256');

  const card = testCard();
  const hashedPan = await sha256Hex(card);
  let deviceKey: DeviceKey | undefined;
  let keyId: string;
  let publicKey: string;
  let privateKeyPkcs8: string | undefined;
  if (path === 'device') {
    const step = addStep(`1. Key pair on this device (WebCrypto, ${algorithm})`);
    deviceKey = await generateDeviceKey({ algorithm });
    step.log('public key (base64 SPKI); the private key is a non-extractable CryptoKey', {
      publicKey: deviceKey.publicKey,
      algorithm: deviceKey.algorithm,
      privateKeyExtractable: deviceKey.privateKey.extractable,
    });
    step.section.classList.add('ok');
    const imported = dataOf(
      await call('1b. Import the public key', 'POST', '/onboarding/keys', issuer, {
        publicKey: deviceKey.publicKey,
      }),
      'import-key',
    );
    keyId = imported.keyId as string;
    publicKey = imported.publicKey as string;
  } else {
    const generated = dataOf(
      await call('1. Key pair by the service (generate-keys)', 'POST', '/onboarding/generate-keys', issuer),
      'generate-keys',
    );
    keyId = generated.keyId as string;
    publicKey = generated.publicKey as string;
    privateKeyPkcs8 = generated.privateKey as string;
  }

  const registered = dataOf(
    await call(
      '2. Register the card (hashed card number + public key)',
      'POST',
      '/onboarding/register',
      issuer,
      {
        hashedPan,
        publicKey,
        keyId,
      },
    ),
    'register',
  );
  const userId = registered.userId as string;

  const receiptId = crypto.randomUUID();
  const lineItemId = crypto.randomUUID();
  const paymentBody = {
    receiptId,
    merchantId: crypto.randomUUID(),
    merchantName: 'Corner Coffee',
    // DigitalReceipt 1.2: what the standard formats need of the seller, the line's VAT and its breakdown.
    merchantLegalName: 'Corner Coffee Roasters LLC',
    merchantVatId: 'US941234567',
    merchantEndpoint: { scheme: '0060', id: '123456789' },
    merchantCountry: 'US',
    transactionId: crypto.randomUUID(),
    paymentMethod: 'card',
    cardLast4: card.slice(-4),
    cardBrand: 'visa',
    subtotal: 900,
    taxAmount: 78,
    totalAmount: 978,
    amount: 978,
    items: [
      {
        lineItemId,
        name: 'Flat white',
        quantity: 2,
        unitPrice: 450,
        totalPrice: 900,
        taxes: [{ name: 'Sales tax', category: 'S', rate: 0.08625, amount: 78 }],
      },
    ],
    taxBreakdown: [{ category: 'S', rate: 0.08625, taxableAmount: 900, taxAmount: 78 }],
    recipientHashedPan: hashedPan,
    // A signed receipt says its own time: the merchant signs it, the service adds none.
    ...(signingKey || credentialKey ? { transactionDate: new Date().toISOString() } : {}),
  };
  // The till signs the receipt the service will seal: the SDK builds it from the body as the service does.
  let headers: Record<string, string> = {};
  if (signingKey) {
    const step = addStep('Sign the receipt at the till (toDigitalReceipt, then signReceipt)');
    const jws = await signReceipt(
      toDigitalReceipt(paymentBody as FlattenedReceipt),
      signingKey.privateKey,
      signingKey.kid,
    );
    step.log('Receipt-Signature: a JWS over the RFC 8785 JSON of the receipt, payload detached', jws);
    step.section.classList.add('ok');
    headers = { 'Receipt-Signature': jws };
  }
  let receiptCredential: string | undefined;
  if (credentialKey) {
    const step = addStep(
      'Issue the presentable receipt at the till (SD-JWT VC: toDigitalReceipt, then issueReceiptCredential)',
    );
    const clientId = await merchantClientId(merchant);
    receiptCredential = await issueReceiptCredential(
      toDigitalReceipt(paymentBody as FlattenedReceipt),
      credentialKey.privateKey,
      credentialKey.kid,
      { issuer: `${location.origin}${api}/merchants/${clientId}/jwks.json` },
    );
    step.log(
      'receiptCredential: every claim selectively disclosable, every disclosure included',
      receiptCredential,
    );
    step.section.classList.add('ok');
  }
  const payment = dataOf(
    await call(
      `3. Payment with the itemised${signingKey ? ', signed' : ''} receipt on ${gateway}`,
      'POST',
      `/payments/${gateway}/create`,
      merchant,
      receiptCredential ? { ...paymentBody, receiptCredential } : paymentBody,
      headers,
    ),
    'payment',
  );

  // Only the specification's path decrypts on the server, which takes an access token. The device
  // holds its own private key and needs none.
  let accessTokenId: string | undefined;
  if (!deviceKey) {
    const token = dataOf(
      await call('4. Access token after the user consents', 'POST', '/keys/grant-access', issuer, {
        userId,
        keyId,
      }),
      'grant-access',
    );
    accessTokenId = token.tokenId as string;
  }

  /** Opens a stored receipt the way this flow's path does: on this device, or on the server with the token. */
  const open = async (title: string, id: string): Promise<Receipt> => {
    const fetched = dataOf(
      await call(`${title}: fetch the envelope`, 'GET', `/receipts/${id}`, issuer),
      'get-receipt',
    );
    if (deviceKey) {
      const step = addStep(`${title}: open it on this device (SDK openEnvelope, WebCrypto)`);
      const opened = await openEnvelope(
        fetched.envelope as Parameters<typeof openEnvelope>[0],
        deviceKey.privateKey,
      );
      step.section.classList.add('ok');
      step.say('Decrypted here: the private key never left this page.');
      return opened as Receipt;
    }
    return dataOf(
      await call(`${title}: decrypt on the server (receipts/decrypt)`, 'POST', '/receipts/decrypt', issuer, {
        envelope: fetched.envelope as Json,
        accessTokenId: accessTokenId ?? '',
        privateKey: privateKeyPkcs8 ?? '',
      }),
      'receipts/decrypt',
    ) as unknown as Receipt;
  };

  let receipt: Receipt;
  if (deviceKey) {
    receipt = await open('5. The receipt', receiptId);
  } else {
    receipt = dataOf(
      await call('5. Decrypt on the server (payments/decrypt)', 'POST', '/payments/decrypt', issuer, {
        paymentId: payment.paymentId as string,
        gateway,
        accessTokenId: accessTokenId ?? '',
        privateKey: privateKeyPkcs8 ?? '',
      }),
      'payments/decrypt',
    ) as unknown as Receipt;
  }
  const shownReceipt = showReceipt('Receipt', 'receipt', receipt);
  await checkSignature(shownReceipt, receipt, issuer);
  const sealedCredential = (receipt as { receiptCredential?: string }).receiptCredential;
  if (sealedCredential) await showPresentation(sealedCredential, issuer);
  if (signingKey) {
    // What the device says of a receipt changed after the merchant signed it (here, its total).
    const tampered = { ...receipt, summary: { ...receipt.summary, total: receipt.summary.total + 100 } };
    const shownTampered = showReceipt(
      'The same receipt with its total changed (tampered)',
      'tampered-receipt',
      tampered,
    );
    await checkSignature(shownTampered, tampered, issuer);
  }

  // The receipt follows its payment: confirmed at the till (in the gateway sandbox), then refunded in part.
  const paymentId = payment.paymentId as string;
  if (gateway === 'gateway_a') {
    const step = addStep('6. Confirm the payment in the gateway sandbox (pm_card_visa), as the till would');
    const confirmed = await fetch('/console/sandbox/confirm', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ paymentId, paymentMethod: 'pm_card_visa' }),
    });
    step.log(`← ${confirmed.status}`, await confirmed.json().catch(() => ({})));
    step.section.classList.add(confirmed.ok ? 'ok' : 'failed');
    if (!confirmed.ok) throw new Error('the sandbox did not confirm the payment');
  }
  await statusBecomes(issuer, receiptId, 'succeeded', '6b. Status from the gateway’s signed event');
  await matchStatementLine(issuer, userId, receipt);
  const refundBody = {
    refundId: crypto.randomUUID(),
    items: [{ lineItemId, quantity: 1 }],
    reason: 'One coffee was cold',
    ...(signingKey ? { refundDate: new Date().toISOString() } : {}),
  };
  // A signing till signs the refund receipt too: the SDK computes it from the sale as the service will.
  let refundHeaders: Record<string, string> = {};
  if (signingKey) {
    const sale = toDigitalReceipt(paymentBody as FlattenedReceipt);
    const jws = await signReceipt(
      toRefundReceipt(sale, refundBody as RefundRequest),
      signingKey.privateKey,
      signingKey.kid,
    );
    refundHeaders = { 'Receipt-Signature': jws };
  }
  const refund = dataOf(
    await call(
      `7. Refund one flat white (itemised${signingKey ? ', signed' : ''})`,
      'POST',
      `/payments/${gateway}/${paymentId}/refunds`,
      merchant,
      refundBody,
      refundHeaders,
    ),
    'refund',
  );
  await statusBecomes(issuer, receiptId, 'partially_refunded', '8. Status of the sale');
  const refundReceipt = await open('9. The refund receipt', refund.receiptId as string);
  await checkSignature(showReceipt('Refund receipt', 'refund-receipt', refundReceipt), refundReceipt, issuer);

  await call('Inbox of the user', 'GET', `/users/${userId}/receipts`, issuer);
  if (webhookId) await call('Webhook deliveries', 'GET', `/webhooks/${webhookId}/deliveries`, issuer);
}

/**
 * Reads the receipt until its paymentStatus is `status`: the gateway's event reaches the service a
 * moment after the call that caused it. Gives up after 30 s.
 */
async function statusBecomes(
  issuer: ApiKey,
  receiptId: string,
  status: string,
  title: string,
): Promise<void> {
  const step = addStep(title);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await fetch(`${api}/receipts/${receiptId}`, { headers: { 'X-API-Key': issuer.value } });
    const body = (await response.json()) as { data?: { paymentStatus?: string | null } };
    const current = body.data?.paymentStatus ?? null;
    if (current === status) {
      step.log(`GET ${api}/receipts/${receiptId} → paymentStatus`, current);
      const line = step.say(`paymentStatus: ${current}`, 'status');
      line.dataset.status = current;
      step.section.classList.add('ok');
      return;
    }
    if (Date.now() > deadline) {
      step.log('still', current);
      step.section.classList.add('failed');
      throw new Error(`the receipt did not become ${status}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

element<HTMLFormElement>('settings').addEventListener('submit', (event) => {
  event.preventDefault();
  const button = element<HTMLButtonElement>('run');
  button.disabled = true;
  runFlow()
    .then(() => {
      steps.dataset.done = 'ok';
    })
    .catch((error: unknown) => {
      addStep(`Stopped: ${error instanceof Error ? error.message : String(error)}`).section.classList.add(
        'failed',
      );
      steps.dataset.done = 'failed';
    })
    .finally(() => {
      button.disabled = false;
    });
});
