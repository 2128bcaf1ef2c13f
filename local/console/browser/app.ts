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
  const webhook = await call('Webhook: receipt.available to this console', 'POST', '/webhooks', issuer, {
    url: `${location.origin}/console/webhook-sink`,
    events: ['receipt.available'],
  });
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
            lineItemId: crypto.randomUUID(),
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

  let receipt: unknown;
  if (deviceKey) {
    const fetched = dataOf(
      await call('5. Fetch the envelope', 'GET', `/receipts/${receiptId}`, issuer),
      'get-receipt',
    );
    const step = addStep('5b. Open it on this device (SDK openEnvelope, WebCrypto)');
    receipt = await openEnvelope(fetched.envelope, deviceKey.privateKey);
    step.section.classList.add('ok');
    step.log('the receipt, decrypted here: the private key never left this page', receipt);
  } else {
    const decrypted = dataOf(
      await call('5. Decrypt on the server (payments/decrypt)', 'POST', '/payments/decrypt', issuer, {
        paymentId: payment.paymentId as string,
        gateway,
        accessTokenId: token.tokenId as string,
        privateKey: privateKeyPkcs8 ?? '',
      }),
      'payments/decrypt',
    );
    receipt = decrypted;
  }
  const shown = addStep('Receipt');
  shown.section.id = 'receipt';
  shown.section.classList.add('ok');
  shown.log('', receipt);

  await call('Inbox of the user', 'GET', `/users/${userId}/receipts`, issuer);
  if (webhookId) await call('Webhook deliveries', 'GET', `/webhooks/${webhookId}/deliveries`, issuer);
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
