import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { signingSecrets } from '../../lib/db/webhooks.js';
import type { HostResolver } from '../../lib/webhooks/url-guard.js';
import { startTestStack, type TestStack } from '../support/stack.js';

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: { fields?: { field: string; message: string }[] } };
}
interface Created {
  webhookId: string;
  url: string;
  events: string[];
  secret: string;
  createdAt: string;
}
interface Listed {
  webhooks: {
    webhookId: string;
    url: string;
    events: string[];
    createdAt: string;
    previousSecretExpiresAt: string | null;
  }[];
}

// No DNS runs here: this stands in for it, with one public name and one that points inside.
const resolveHost: HostResolver = async (hostname) => {
  const names: Record<string, string[]> = {
    'hooks.example.com': ['93.184.215.14'],
    'example.com': ['93.184.215.14'],
    'internal.example.com': ['10.1.2.3'],
  };
  const found = names[hostname];
  if (!found) throw new Error(`ENOTFOUND ${hostname}`);
  return found;
};

describe('webhook registration over HTTP', () => {
  let stack: TestStack;
  let issuer: { apiKey: string; clientId: string };
  let merchant: { apiKey: string; clientId: string };
  let both: { apiKey: string; clientId: string };

  beforeAll(async () => {
    stack = await startTestStack({ resolveHost });
    issuer = await stack.apiKey(['issuer']);
    merchant = await stack.apiKey(['merchant']);
    both = await stack.apiKey(['merchant', 'issuer']);
  });

  afterAll(async () => {
    await stack?.close();
  });

  const create = (apiKey: string, body: unknown) =>
    stack.request<Data<Created> & ErrorBody>('POST', '/api/v1/webhooks', { apiKey, body });
  const list = async (apiKey: string) => {
    const reply = await stack.request<Data<Listed>>('GET', '/api/v1/webhooks', { apiKey });
    expect(reply.status).toBe(200);
    return reply.json.data.webhooks;
  };

  it('creates, lists without secrets, rotates and deletes a webhook', async () => {
    const created = await create(issuer.apiKey, {
      url: 'https://hooks.example.com/receipts',
      events: ['receipt.available'],
    });
    expect(created.status).toBe(201);
    const webhook = created.json.data;
    expect(webhook).toEqual({
      webhookId: expect.stringMatching(/^wh_[a-z2-7]{26}$/),
      url: 'https://hooks.example.com/receipts',
      events: ['receipt.available'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      createdAt: stack.clock.now().toISOString(),
    });
    expect(Buffer.from(webhook.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const listed = await list(issuer.apiKey);
    expect(listed).toEqual([
      {
        webhookId: webhook.webhookId,
        url: webhook.url,
        events: webhook.events,
        createdAt: webhook.createdAt,
        previousSecretExpiresAt: null,
      },
    ]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');

    stack.clock.advance(60_000);
    const rotated = await stack.request<
      Data<{ webhookId: string; secret: string; previousSecretExpiresAt: string }>
    >('POST', `/api/v1/webhooks/${webhook.webhookId}/rotate-secret`, { apiKey: issuer.apiKey });
    expect(rotated.status).toBe(200);
    const expiresAt = new Date(stack.clock.now().getTime() + 24 * 3600_000).toISOString();
    expect(rotated.json.data).toEqual({
      webhookId: webhook.webhookId,
      secret: expect.stringMatching(/^whsec_/),
      previousSecretExpiresAt: expiresAt,
    });
    expect(rotated.json.data.secret).not.toBe(webhook.secret);
    expect((await list(issuer.apiKey))[0]!.previousSecretExpiresAt).toBe(expiresAt);

    // Both sign during the overlap, the new one alone after it.
    const stored = (await stack.deps.repos.webhooks.get(webhook.webhookId))!;
    expect(signingSecrets(stored, stack.clock.now())).toEqual([rotated.json.data.secret, webhook.secret]);
    expect(signingSecrets(stored, new Date(Date.parse(expiresAt) + 1))).toEqual([rotated.json.data.secret]);
    stack.clock.advance(24 * 3600_000 + 1);
    expect((await list(issuer.apiKey))[0]!.previousSecretExpiresAt).toBeNull();

    const deleted = await stack.request<Data<unknown>>('DELETE', `/api/v1/webhooks/${webhook.webhookId}`, {
      apiKey: issuer.apiKey,
    });
    expect(deleted.status).toBe(200);
    expect(deleted.json.data).toEqual({ webhookId: webhook.webhookId, deleted: true });
    expect(await list(issuer.apiKey)).toEqual([]);
    expect(await stack.deps.repos.webhooks.get(webhook.webhookId)).toBeNull();
    const again = await stack.request('DELETE', `/api/v1/webhooks/${webhook.webhookId}`, {
      apiKey: issuer.apiKey,
    });
    expect(again.status).toBe(404);
  });

  it.each([
    [
      'https://169.254.169.254/latest/meta-data/',
      'link-local address: webhooks are sent to public unicast addresses only',
    ],
    ['https://10.0.0.1/hook', 'private address'],
    ['https://[::1]/hook', 'loopback address'],
    ['https://[::ffff:169.254.169.254]/hook', 'link-local address'],
    ['http://example.com/hook', 'plain http is allowed only to a loopback address on the local stack'],
    ['https://internal.example.com/hook', 'private address'],
    ['https://unknown.example.com/hook', 'does not resolve'],
    ['ftp://hooks.example.com/hook', 'the scheme must be https, not ftp'],
  ])('refuses %s naming why, and stores nothing', async (url, reason) => {
    const refused = await create(both.apiKey, { url, events: ['receipt.available'] });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('INVALID_REQUEST');
    expect(refused.json.error.message).toContain(reason);
    expect(refused.json.error.details?.fields).toEqual([
      { field: 'url', message: expect.stringContaining(reason) },
    ]);
    // The resolved address is never echoed (internal.example.com is 10.1.2.3 here).
    expect(refused.text).not.toContain('10.1.2.3');
    expect(await list(both.apiKey)).toEqual([]);
  });

  it('accepts plain http to 127.0.0.1 on the local stack', async () => {
    const created = await create(merchant.apiKey, {
      url: 'http://127.0.0.1:4567/in',
      events: ['receipt.escrowed'],
    });
    expect(created.status).toBe(201);
    expect(created.json.data.url).toBe('http://127.0.0.1:4567/in');
    await stack.request('DELETE', `/api/v1/webhooks/${created.json.data.webhookId}`, {
      apiKey: merchant.apiKey,
    });
  });

  it('allows each event to the role that may hear it only', async () => {
    const merchantAvailable = await create(merchant.apiKey, {
      url: 'https://hooks.example.com/m',
      events: ['receipt.available'],
    });
    expect(merchantAvailable.status).toBe(403);
    expect(merchantAvailable.json.error.message).toBe(
      'Subscribing to receipt.available needs the issuer role',
    );
    const issuerEscrowed = await create(issuer.apiKey, {
      url: 'https://hooks.example.com/i',
      events: ['receipt.available', 'receipt.escrowed'],
    });
    expect(issuerEscrowed.status).toBe(403);
    expect(issuerEscrowed.json.error.message).toBe('Subscribing to receipt.escrowed needs the merchant role');
    expect(await list(merchant.apiKey)).toEqual([]);
    expect(await list(issuer.apiKey)).toEqual([]);

    const bothEvents = await create(both.apiKey, {
      url: 'https://hooks.example.com/b',
      events: ['receipt.escrowed', 'receipt.available', 'receipt.escrowed'],
    });
    expect(bothEvents.status).toBe(201);
    expect(bothEvents.json.data.events).toEqual(['receipt.available', 'receipt.escrowed']);
    await stack.request('DELETE', `/api/v1/webhooks/${bothEvents.json.data.webhookId}`, {
      apiKey: both.apiKey,
    });
  });

  it('refuses bodies that are not a url and a non-empty list of known events', async () => {
    for (const body of [
      { url: 'https://hooks.example.com/x', events: [] },
      { url: 'https://hooks.example.com/x', events: ['receipt.deleted'] },
      { url: 'https://hooks.example.com/x' },
      { url: 'https://hooks.example.com/x', events: ['receipt.available'], secret: 'whsec_mine' },
    ]) {
      const refused = await create(issuer.apiKey, body);
      expect(refused.status).toBe(400);
    }
  });

  it("hides one client's webhooks from another: listing, deleting and rotating are as for an unknown id", async () => {
    const created = await create(issuer.apiKey, {
      url: 'https://hooks.example.com/own',
      events: ['receipt.available'],
    });
    const { webhookId, secret } = created.json.data;
    const other = await stack.apiKey(['issuer']);
    expect(await list(other.apiKey)).toEqual([]);
    const unknownId = `wh_${'a'.repeat(26)}`;
    for (const id of [webhookId, unknownId]) {
      const deleted = await stack.request<ErrorBody>('DELETE', `/api/v1/webhooks/${id}`, {
        apiKey: other.apiKey,
      });
      const rotated = await stack.request<ErrorBody>('POST', `/api/v1/webhooks/${id}/rotate-secret`, {
        apiKey: other.apiKey,
      });
      expect([deleted.status, rotated.status]).toEqual([404, 404]);
      expect(deleted.json.error.message).toBe('No webhook with this webhookId');
      expect(rotated.json.error.message).toBe('No webhook with this webhookId');
    }
    // Still there, with the secret it had.
    const stored = await stack.deps.repos.webhooks.get(webhookId);
    expect(stored?.secret).toBe(secret);
    expect(stored?.previousSecret).toBeUndefined();
    const malformed = await stack.request('DELETE', '/api/v1/webhooks/not-a-webhook', {
      apiKey: issuer.apiKey,
    });
    expect(malformed.status).toBe(400);
    await stack.request('DELETE', `/api/v1/webhooks/${webhookId}`, { apiKey: issuer.apiKey });
  });

  it('allows ten webhooks per client, and one more once one is deleted', async () => {
    const client = await stack.apiKey(['merchant']);
    const made = await Promise.all(
      Array.from({ length: 12 }, (_, index) =>
        create(client.apiKey, { url: `https://hooks.example.com/${index}`, events: ['receipt.escrowed'] }),
      ),
    );
    // Concurrent creates cannot pass the limit: the count moves with each write in one transaction.
    expect(made.filter((reply) => reply.status === 201)).toHaveLength(10);
    const refused = made.filter((reply) => reply.status === 409);
    expect(refused).toHaveLength(2);
    expect(refused[0]!.json.error.code).toBe('WEBHOOK_LIMIT_REACHED');
    expect(await list(client.apiKey)).toHaveLength(10);

    const first = made.find((reply) => reply.status === 201)!.json.data.webhookId;
    await stack.request('DELETE', `/api/v1/webhooks/${first}`, { apiKey: client.apiKey });
    const after = await create(client.apiKey, {
      url: 'https://hooks.example.com/11',
      events: ['receipt.escrowed'],
    });
    expect(after.status).toBe(201);
    const overflow = await create(client.apiKey, {
      url: 'https://hooks.example.com/12',
      events: ['receipt.escrowed'],
    });
    expect(overflow.status).toBe(409);
  });
});
