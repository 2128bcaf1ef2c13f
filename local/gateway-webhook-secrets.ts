/**
 * The gateway sandbox's webhook signing secrets, shared by the sandbox (which signs the providers'
 * events) and the local service (which verifies them): a file in the data folder plays the part of
 * the Secrets Manager secrets in AWS (lib/wiring/aws-gateways.ts). Made on first start, 0600.
 */
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as z from 'zod';
import type { WebhookSecrets } from './gateway-sandbox/events.js';
import { ensurePrivateDir, ensurePrivateFile } from './private-files.js';

export const WEBHOOK_SECRETS_FILE = 'gateway-webhook-secrets.json';

/** New secrets in the providers' own shapes: Stripe's `whsec_…`, and a Square signature key. */
export const newWebhookSecrets = (): WebhookSecrets => ({
  stripe: `whsec_${randomBytes(32).toString('base64')}`,
  square: randomBytes(24).toString('base64url'),
});

const fileSchema = z.object({ stripe: z.string().startsWith('whsec_'), square: z.string().min(16) });

/** `<dir>/gateway-webhook-secrets.json`, made on first start. */
export async function loadOrCreateWebhookSecrets(dir: string): Promise<WebhookSecrets> {
  await ensurePrivateDir(dir);
  const file = join(dir, WEBHOOK_SECRETS_FILE);
  try {
    // 'wx': two processes starting together cannot overwrite each other's secrets.
    await writeFile(file, `${JSON.stringify(newWebhookSecrets(), null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  await ensurePrivateFile(file);
  const parsed = fileSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
  if (!parsed.success) throw new Error(`${file} is not a webhook secrets file; fix or remove it`);
  return parsed.data;
}
