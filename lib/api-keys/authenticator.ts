import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../kernel/clock.js';
import type { ApiKeyEnvironment } from '../kernel/config.js';
import type { ApiKeyRecord, ApiKeyRepository } from '../db/api-keys.js';
import { UnauthorizedError } from '../kernel/errors.js';
import type { Role } from '../kernel/route.js';
import type { TierName } from '../kernel/tiers.js';

/**
 * API keys look like `rk_<environment>_<keyId>_<secret>`: the environment is checked before anything
 * is read, the key id finds the record, the secret is compared by hash in constant time. Only
 * sha256(secret) is stored; the key is shown once, at creation.
 */
const API_KEY_PATTERN = /^rk_(live|test|local)_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;
/** Only the environment, so that a foreign key is named even when the rest of it is mangled. */
const ENVIRONMENT_PREFIX = /^rk_(live|test|local)_/;
/** Keys made before keys named their environment: `rk_<keyId>_<secret>`, accepted only locally. */
const LEGACY_API_KEY_PATTERN = /^rk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;

export const environmentLabels: Record<ApiKeyEnvironment, string> = {
  live: 'production',
  test: 'staging',
  local: 'local development',
};

const describeEnvironment = (environment: ApiKeyEnvironment): string =>
  `${environment} (${environmentLabels[environment]})`;

export type ParsedApiKey =
  | { format: 'current'; environment: ApiKeyEnvironment; keyId: string; secret: string }
  | { format: 'legacy'; keyId: string; secret: string }
  /** Names an environment but is otherwise not a key. */
  | { format: 'malformed'; environment: ApiKeyEnvironment };

/** What a presented string is, without any lookup; null when it is not an API key at all. */
export function parseApiKey(presented: string): ParsedApiKey | null {
  const current = API_KEY_PATTERN.exec(presented);
  if (current) {
    const [, environment, keyId, secret] = current as unknown as [string, ApiKeyEnvironment, string, string];
    return { format: 'current', environment, keyId, secret };
  }
  const legacy = LEGACY_API_KEY_PATTERN.exec(presented);
  if (legacy) {
    const [, keyId, secret] = legacy as unknown as [string, string, string];
    return { format: 'legacy', keyId, secret };
  }
  const prefix = ENVIRONMENT_PREFIX.exec(presented);
  if (prefix) return { format: 'malformed', environment: prefix[1] as ApiKeyEnvironment };
  return null;
}

/** A key that belongs to another environment: 401, saying whose key it is, before any lookup. */
export class ForeignApiKeyError extends UnauthorizedError {
  constructor(
    readonly keyEnvironment: ApiKeyEnvironment | 'none',
    readonly serviceEnvironment: ApiKeyEnvironment,
  ) {
    const wanted = `this is the ${describeEnvironment(serviceEnvironment)} environment, which takes only rk_${serviceEnvironment}_ keys`;
    super(
      keyEnvironment === 'none'
        ? `This API key has the old format rk_<keyId>_<secret>, which names no environment; ${wanted}. Ask for a new key`
        : `This is a ${describeEnvironment(keyEnvironment)} API key; ${wanted}`,
    );
  }
}

export interface Caller {
  clientId: string;
  keyId: string;
  name: string;
  roles: Role[];
  tier: TierName;
}

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();

function newApiKey(environment: ApiKeyEnvironment): { keyId: string; apiKey: string; secretHash: string } {
  const keyId = randomBytes(16).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return {
    keyId,
    apiKey: `rk_${environment}_${keyId}_${secret}`,
    secretHash: sha256(secret).toString('hex'),
  };
}

/**
 * A new key and its record. Without an environment it is a local key: a forgotten environment makes
 * a key every deployed stage refuses, never one that works where it should not.
 */
export function newApiKeyRecord(
  input: { name: string; roles: Role[]; tier: TierName; environment?: ApiKeyEnvironment },
  now: Date,
): { apiKey: string; record: ApiKeyRecord } {
  const environment = input.environment ?? 'local';
  const { keyId, apiKey, secretHash } = newApiKey(environment);
  return {
    apiKey,
    record: {
      keyId,
      clientId: randomUUID(),
      name: input.name,
      roles: input.roles,
      tier: input.tier,
      environment,
      secretHash,
      status: 'active',
      createdAt: now.toISOString(),
    },
  };
}

/**
 * A key that is unknown, revoked or malformed: the same words at the edge (the authorizer's Deny) and
 * in the functions, so a client reads the same refusal deployed and on the local stack.
 */
export const INVALID_KEY_MESSAGE = 'The API key in X-API-Key is not valid';

/** A request with no X-API-Key: says what to fix, the usual mistake being a key sent as a bearer token. */
export const missingKeyMessage = (hasAuthorizationHeader: boolean): string =>
  hasAuthorizationHeader
    ? 'Send the API key in the X-API-Key header; the Authorization header is not read'
    : 'Missing API key: send it in the X-API-Key header';

/** Verifies presented keys, caching records briefly so a hot key costs one read per cache lifetime. */
export class ApiKeyAuthenticator {
  private readonly cache = new Map<string, { record: ApiKeyRecord | null; fetchedAt: number }>();

  constructor(
    private readonly repository: ApiKeyRepository,
    private readonly clock: Clock,
    private readonly cacheTtlSeconds: number,
    /** The environment this service runs in (config.apiKeyEnvironment); local refuses deployed keys. */
    private readonly environment: ApiKeyEnvironment = 'local',
    private readonly maxCacheEntries = 10_000,
  ) {}

  /**
   * The caller for a valid active key, or null for anything else; throws ForeignApiKeyError for a key
   * of another environment (and, outside the local stack, for an old-format key).
   */
  async authenticate(presented: string | undefined): Promise<Caller | null> {
    const parsed = presented ? parseApiKey(presented) : null;
    if (!parsed) return null;
    if (parsed.format === 'legacy') {
      if (this.environment !== 'local') throw new ForeignApiKeyError('none', this.environment);
    } else if (parsed.environment !== this.environment) {
      throw new ForeignApiKeyError(parsed.environment, this.environment);
    }
    if (parsed.format === 'malformed') return null;
    const record = await this.lookup(parsed.keyId);
    if (!record || record.status !== 'active') return null;
    // Records made before keys named their environment carry none: they are the local stack's.
    if ((record.environment ?? 'local') !== this.environment) return null;
    const expected = Buffer.from(record.secretHash, 'hex');
    const actual = sha256(parsed.secret);
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
