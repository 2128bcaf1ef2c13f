import {
  generateDeviceKey,
  openEnvelope,
  type DeviceKey,
  type KeyWrapAlgorithm,
} from '../../../packages/sdk/src/index.js';

/**
 * The console's script: runs the flow step by step against this origin and shows every request
 * and response. API keys and private keys live in this closure only: nothing is written to
 * localStorage, sessionStorage, cookies or IndexedDB, and a reload forgets them.
 */
type Json = Record<string, unknown>;
interface Reply {
  status: number;
  body: unknown;
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

function addStep(title: string): { section: HTMLElement; log(label: string, value: unknown): void } {
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
      caption.textContent = label;
      const pre = document.createElement('pre');
      pre.textContent = typeof value === 'string' ? value : JSON.stringify(redact(value), null, 2);
      section.append(caption, pre);
    },
  };
}

async function call(
  title: string,
  method: string,
  path: string,
  apiKey: { name: string; value: string },
  body?: Json,
): Promise<Reply> {
  const step = addStep(title);
  step.log(`→ ${method} ${api}${path}   X-API-Key: •••• (${apiKey.name})`, body ?? '(no body)');
  const response = await fetch(`${api}${path}`, {
    method,
    headers: {
      'X-API-Key': apiKey.value,
      ...(body ? { 'Content-Type': 'application/json' } : {}),
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
  step.log(`← ${response.status}`, parsed);
  step.section.classList.add(response.ok ? 'ok' : 'failed');
  return { status: response.status, body: parsed };
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

async function runFlow(): Promise<void> {
  steps.replaceChildren();
  delete steps.dataset.done;
  const merchant = { name: 'merchant', value: element<HTMLInputElement>('merchantKey').value.trim() };
  const issuer = { name: 'issuer', value: element<HTMLInputElement>('issuerKey').value.trim() };
  const path = element<HTMLSelectElement>('path').value as 'device' | 'spec';
  const algorithm = element<HTMLSelectElement>('algorithm').value as KeyWrapAlgorithm;
  const gateway = element<HTMLSelectElement>('gateway').value;

  // Webhook first, so the receipt below raises a delivery; its failure does not stop the flow.
  const webhook = await call(
    'Webhook: receipt.available and receipt.updated to this console',
    'POST',
    '/webhooks',
    issuer,
    {
      url: `${location.origin}/console/webhook-sink`,
      events: ['receipt.available', 'receipt.updated'],
    },
  );
  const webhookId = webhook.status < 300 ? (dataOf(webhook, 'webhook').webhookId as string) : undefined;

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
  const payment = dataOf(
    await call(
      `3. Payment with the itemised receipt on ${gateway}`,
      'POST',
      `/payments/${gateway}/create`,
      merchant,
      {
        receiptId,
        merchantId: crypto.randomUUID(),
        merchantName: 'Corner Coffee',
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
          },
        ],
        recipientHashedPan: hashedPan,
      },
    ),
    'payment',
  );

  const token = dataOf(
    await call('4. Access token after the user consents', 'POST', '/keys/grant-access', issuer, {
      userId,
      keyId,
    }),
    'grant-access',
  );

  /** Opens a stored receipt the way this flow's path does: on this device, or on the server with the token. */
  const open = async (title: string, id: string): Promise<unknown> => {
    const fetched = dataOf(
      await call(`${title}: fetch the envelope`, 'GET', `/receipts/${id}`, issuer),
      'get-receipt',
    );
    if (deviceKey) {
      const step = addStep(`${title}: open it on this device (SDK openEnvelope, WebCrypto)`);
      const opened = await openEnvelope(fetched.envelope, deviceKey.privateKey);
      step.section.classList.add('ok');
      step.log('decrypted here: the private key never left this page', opened);
      return opened;
    }
    return dataOf(
      await call(`${title}: decrypt on the server (receipts/decrypt)`, 'POST', '/receipts/decrypt', issuer, {
        envelope: fetched.envelope as Json,
        accessTokenId: token.tokenId as string,
        privateKey: privateKeyPkcs8 ?? '',
      }),
      'receipts/decrypt',
    );
  };

  let receipt: unknown;
  if (deviceKey) {
    receipt = await open('5. The receipt', receiptId);
  } else {
    receipt = dataOf(
      await call('5. Decrypt on the server (payments/decrypt)', 'POST', '/payments/decrypt', issuer, {
        paymentId: payment.paymentId as string,
        gateway,
        accessTokenId: token.tokenId as string,
        privateKey: privateKeyPkcs8 ?? '',
      }),
      'payments/decrypt',
    );
  }
  const shown = addStep('Receipt');
  shown.section.id = 'receipt';
  shown.section.classList.add('ok');
  shown.log('', receipt);

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
  const refund = dataOf(
    await call(
      '7. Refund one flat white (itemised)',
      'POST',
      `/payments/${gateway}/${paymentId}/refunds`,
      merchant,
      {
        refundId: crypto.randomUUID(),
        items: [{ lineItemId, quantity: 1 }],
        reason: 'One coffee was cold',
      },
    ),
    'refund',
  );
  await statusBecomes(issuer, receiptId, 'partially_refunded', '8. Status of the sale');
  const refundReceipt = await open('9. The refund receipt', refund.receiptId as string);
  const refundShown = addStep('Refund receipt');
  refundShown.section.id = 'refund-receipt';
  refundShown.section.classList.add('ok');
  refundShown.log('', refundReceipt);

  await call('Inbox of the user', 'GET', `/users/${userId}/receipts`, issuer);
  if (webhookId) await call('Webhook deliveries', 'GET', `/webhooks/${webhookId}/deliveries`, issuer);
}

/**
 * Reads the receipt until its paymentStatus is `status`: the gateway's event reaches the service a
 * moment after the call that caused it. Gives up after 30 s.
 */
async function statusBecomes(
  issuer: { name: string; value: string },
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
      const shown = document.createElement('div');
      shown.className = 'status';
      shown.dataset.status = current;
      shown.textContent = `paymentStatus: ${current}`;
      step.section.append(shown);
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
