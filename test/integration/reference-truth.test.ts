import { createHash } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { requireAllTables } from '../../lib/kernel/config.js';
import { matchReceiptsRoute } from '../../functions/receipts/match-receipts/route.js';
import { routes } from '../../functions/routes.js';
import { newHashedPan, sampleReceipt } from '../support/fixtures.js';
import { onboardUser } from '../support/flow.js';
import { startTestStack, type TestStack } from '../support/stack.js';

const MATCH_PATH = matchReceiptsRoute.path;

/**
 * The API reference (GET /api/v1/docs, which renders the document GET /api/v1/openapi.json serves)
 * against what the running service does, for each statement issue 22 found false: unknown fields,
 * the nested form's recipientIdentifier, registration and escrow, the success statuses, and an
 * overview that covers both flows, the inbox, match and webhooks. Each test asks the service and
 * reads the live document.
 */

interface Data<T> {
  success: true;
  data: T;
}
interface ErrorBody {
  error: { code: string; message: string; details?: { fields?: { field: string; message: string }[] } };
}
interface Operation {
  responses: Record<string, unknown>;
}
interface Document {
  info: { description: string };
  paths: Record<string, Record<string, Operation>>;
}

describe('the API reference says what the service does', () => {
  let stack: TestStack;
  let merchant: string;
  let issuer: string;
  let document: Document;
  /** The overview with its line breaks folded, as a reader of the rendered page sees it. */
  let overview: string;
  let page: string;

  beforeAll(async () => {
    stack = await startTestStack();
    merchant = (await stack.apiKey(['merchant'])).apiKey;
    issuer = (await stack.apiKey(['issuer'])).apiKey;
    document = (await stack.request<Document>('GET', '/api/v1/openapi.json')).json;
    overview = document.info.description.replace(/\s+/g, ' ');
    page = (await stack.request('GET', '/api/v1/docs')).text;
  });

  afterAll(async () => {
    await stack?.close();
  });

  /** The reference page embeds the document it renders: the page's copy says the same. */
  const onThePage = (phrase: string) => {
    const embedded = /<script type="application\/json" id="openapi-document">([\s\S]*?)<\/script>/.exec(page);
    const described = (JSON.parse(embedded![1]!) as Document).info.description.replace(/\s+/g, ' ');
    expect(described).toBe(overview);
    expect(described).toContain(phrase);
  };

  it('refuses unknown fields by name, and says so instead of saying they are ignored', async () => {
    const keys = await stack.request<Data<{ keyId: string; publicKey: string }>>(
      'POST',
      '/api/v1/onboarding/generate-keys',
      { apiKey: issuer },
    );
    const reply = await stack.request<ErrorBody>('POST', '/api/v1/onboarding/register', {
      apiKey: issuer,
      body: {
        hashedPan: newHashedPan(),
        publicKey: keys.json.data.publicKey,
        keyId: keys.json.data.keyId,
        hashedPann: 'x',
      },
    });
    expect([reply.status, reply.json.error.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(reply.json.error.details?.fields).toEqual([
      { field: 'hashedPann', message: expect.stringContaining('hashedPan') },
    ]);
    expect(overview).toContain('Unknown request fields are refused: 400 `INVALID_REQUEST` naming each');
    expect(overview).not.toMatch(/unknown (request )?fields are ignored/i);
    onThePage('Unknown request fields are refused');
  });

  it("does not store the nested form's recipientIdentifier in any form, and says so", async () => {
    const value = `reference-truth-${Date.now()}@example.com`;
    const receipt = sampleReceipt();
    const reply = await stack.request<Data<{ isEscrowed: boolean }>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      body: { receipt, recipientIdentifier: { type: 'email', value } },
    });
    expect(reply.status).toBe(200);
    expect(reply.json.data.isEscrowed).toBe(true);
    const sha256 = createHash('sha256').update(value).digest();
    const forms = [value, sha256.toString('hex'), sha256.toString('base64'), sha256.toString('base64url')];
    let stored = '';
    for (const table of Object.values(requireAllTables(stack.config))) {
      let startKey: Record<string, unknown> | undefined;
      do {
        const scanned = await stack.deps.dynamo.doc.send(
          new ScanCommand({ TableName: table, ExclusiveStartKey: startKey }),
        );
        stored += JSON.stringify(scanned.Items ?? []);
        startKey = scanned.LastEvaluatedKey;
      } while (startKey);
    }
    expect(stored).toContain(receipt.receiptId);
    for (const form of forms)
      expect({ form, stored: stored.includes(form) }).toEqual({ form, stored: false });
    expect(overview).toContain(
      '`recipientIdentifier`, which never selects a user and is not stored in any form',
    );
    expect(overview).not.toMatch(/as a hash/);
    onThePage('which never selects a user and is not stored in any form');
  });

  it('releases nothing on registration, only on a claim, and says so', async () => {
    const hashedPan = newHashedPan();
    const receipt = sampleReceipt();
    const escrowed = await stack.request<Data<{ isEscrowed: boolean }>>('POST', '/api/v1/receipts/encrypt', {
      apiKey: merchant,
      body: {
        receipt,
        recipientIdentifier: { type: 'email', value: 'cardholder@example.com' },
        recipientHashedPan: hashedPan,
      },
    });
    expect(escrowed.json.data.isEscrowed).toBe(true);
    const user = await onboardUser(stack, issuer, hashedPan);
    const inbox = async () =>
      (
        await stack.request<Data<{ receipts: { receiptId: string }[] }>>(
          'GET',
          `/api/v1/users/${user.userId}/receipts`,
          {
            apiKey: issuer,
          },
        )
      ).json.data.receipts.map(({ receiptId }) => receiptId);
    expect(await inbox()).toEqual([]);
    const claimed = await stack.request<Data<{ released: number }>>('POST', '/api/v1/receipts/claim', {
      apiKey: issuer,
      body: {
        userId: user.userId,
        transactions: [
          {
            amount: receipt.summary.total,
            currency: receipt.summary.currency,
            transactionDate: receipt.transaction.datetime,
          },
        ],
      },
    });
    expect([claimed.status, claimed.json.data.released]).toEqual([200, 1]);
    expect(await inbox()).toEqual([receipt.receiptId]);
    expect(overview).toContain('Registering the card releases nothing');
    expect(overview).toContain('`POST /api/v1/receipts/claim`');
    expect(overview).not.toMatch(/when the hashedPan registers/i);
    onThePage('Registering the card releases nothing');
  });

  it('answers 201 to the creates the document says 201 for, and does not say success is always 200', async () => {
    const imported = await stack.request('POST', '/api/v1/onboarding/keys', {
      apiKey: issuer,
      body: { publicKey: (await onboardUser(stack, issuer)).publicKey },
    });
    const webhook = await stack.request<Data<{ webhookId: string }>>('POST', '/api/v1/webhooks', {
      apiKey: issuer,
      body: { url: 'http://127.0.0.1:9/hook', events: ['receipt.available'] },
    });
    expect([imported.status, webhook.status]).toEqual([201, 201]);
    const successes = (path: string, method: string) =>
      Object.keys(document.paths[path]![method]!.responses).filter((status) => status.startsWith('2'));
    expect(successes('/api/v1/onboarding/keys', 'post')).toEqual(['201']);
    expect(successes('/api/v1/webhooks', 'post')).toEqual(['201']);
    expect(successes('/api/v1/onboarding/register', 'post')).toEqual(['200']);
    // Every route declared 201, and only those, is listed, whatever routes are added later.
    const creates = routes
      .filter((route) => route.response.status === 201)
      .map((route) => `\`${route.method} ${route.path}\``);
    expect(creates).toEqual(
      expect.arrayContaining(['`POST /api/v1/onboarding/keys`', '`POST /api/v1/webhooks`']),
    );
    expect(overview).toContain(`with 200, or 201 where a resource is created (${creates.join(', ')})`);
    expect(overview).not.toMatch(/with 200\. /);
    await stack.request('DELETE', `/api/v1/webhooks/${webhook.json.data.webhookId}`, { apiKey: issuer });
  });

  it('gives an overview of both flows, the inbox, match and webhooks, each as the service has it', async () => {
    for (const heading of [
      "## The specification's flow",
      '## The device flow',
      '## The inbox, escrow and claims',
      '## Matching receipts to card transactions',
      '## Webhooks',
    ]) {
      expect(document.info.description).toContain(heading);
    }
    for (const operation of [
      'POST /api/v1/onboarding/keys',
      'GET /api/v1/receipts/{receiptId}',
      'GET /api/v1/users/{userId}/receipts',
      'POST /api/v1/receipts/claim',
      `POST ${MATCH_PATH}`,
      'POST /api/v1/webhooks',
    ]) {
      expect(overview).toContain(`\`${operation}\``);
      const [method, path] = operation.split(' ') as [string, string];
      const listed = document.paths[path]?.[method.toLowerCase()] !== undefined;
      expect({ operation, listed }).toEqual({ operation, listed: true });
    }
    const match = await stack.request(
      'POST',
      MATCH_PATH.replace('{userId}', (await onboardUser(stack, issuer)).userId),
      {
        apiKey: issuer,
        body: { transactions: [] },
      },
    );
    expect(match.status).not.toBe(404);
    expect(overview).toContain('See the operation below.');
  });
});
