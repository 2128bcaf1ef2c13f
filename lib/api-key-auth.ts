import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from './clock.js';
import type { ApiKeyRecord, ApiKeyRepository } from './db/api-keys.js';
import type { Role } from './routes.js';
import type { TierName } from './tiers.js';

/**
 * API keys look like `rk_<keyId>_<secret>`: the key id finds the record, the secret is compared by
 * hash in constant time. Only sha256(secret) is stored; the key is shown once, at creation.
 */
const API_KEY_PATTERN = /^rk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

export interface Caller {
  clientId: string;
  keyId: string;
  name: string;
  roles: Role[];
  tier: TierName;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

function newApiKey(): { keyId: string; apiKey: string; secretHash: string } {
  const keyId = randomBytes(16).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { keyId, apiKey: `rk_${keyId}_${secret}`, secretHash: sha256(secret).toString('hex') };
}

export function newApiKeyRecord(
  input: { name: string; roles: Role[]; tier: TierName },
  now: Date,
): { apiKey: string; record: ApiKeyRecord } {
  const { keyId, apiKey, secretHash } = newApiKey();
  return {
    apiKey,
    record: {
      keyId,
      clientId: randomUUID(),
      name: input.name,
      roles: input.roles,
      tier: input.tier,
      secretHash,
      status: 'active',
      createdAt: now.toISOString(),
    },
  };
}

/** Verifies presented keys, caching records briefly so a hot key costs one read per cache lifetime. */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, { record: ApiKeyRecord | null; fetchedAt: number }>();

  constructor(
    private readonly repository: ApiKeyRepository,
    private readonly clock: Clock,
    private readonly cacheTtlSeconds: number,
    private readonly maxCacheEntries = 10_000,
  ) {}

  /** The caller for a valid active key, or null for anything else. */
  async authenticate(presented: string | undefined): Promise<Caller | null> {
    const match = presented ? API_KEY_PATTERN.exec(presented) : null;
    if (!match) return null;
    const [, keyId, secret] = match as unknown as [string, string, string];
    const record = await this.lookup(keyId);
    if (!record || record.status !== 'active') return null;
    const expected = Buffer.from(record.secretHash, 'hex');
    const actual = sha256(secret);
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
    return {
      clientId: record.clientId,
      keyId: record.keyId,
      name: record.name,
      roles: record.roles,
      tier: record.tier,
    };
  }

  private async lookup(keyId: string): Promise<ApiKeyRecord | null> {
    const now = this.clock.now().getTime();
    const cached = this.cache.get(keyId);
    if (cached && now - cached.fetchedAt < this.cacheTtlSeconds * 1000) return cached.record;
    const record = await this.repository.get(keyId);
    if (this.cache.size >= this.maxCacheEntries) this.cache.clear();
    this.cache.set(keyId, { record, fetchedAt: now });
    return record;
  }
}
