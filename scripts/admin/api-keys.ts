import { environmentLabels, newApiKeyRecord } from '../../lib/api-keys/authenticator.js';
import type { ApiKeyEnvironment } from '../../lib/kernel/config.js';
import type { ApiKeyRecord, ApiKeyRepository } from '../../lib/db/api-keys.js';
import type { Role } from '../../lib/kernel/route.js';
import type { TierName } from '../../lib/kernel/tiers.js';
import type { EdgeKeyStore } from './api-gateway-keys.js';

/**
 * API key administration, shared by the CLI for the local stack and for a deployed one; on a
 * deployed stack the same key also exists at the edge (API Gateway key + usage-plan membership).
 */
export interface ApiKeyAdminDeps {
  repository: ApiKeyRepository;
  /** Present only against a deployed stack. */
  edge?: EdgeKeyStore;
  /** The environment of the table's stack; `local` when omitted (the local stack and tests). */
  environment?: ApiKeyEnvironment;
  now: () => Date;
}

export type PublicApiKeyRecord = Omit<ApiKeyRecord, 'secretHash' | 'environment'> & {
  environment: ApiKeyEnvironment;
};

const publicView = ({ secretHash: _secretHash, environment, ...rest }: ApiKeyRecord): PublicApiKeyRecord => ({
  ...rest,
  environment: environment ?? 'local',
});

export class UnknownKeyError extends Error {}

/** A key was asked for another environment than the table's: it would never work there. */
export class EnvironmentMismatchError extends Error {}

/** Refuses a key asked for another environment than the table's, which would never work there. */
export function checkKeyEnvironment(table: ApiKeyEnvironment, asked: ApiKeyEnvironment | undefined): void {
  if (asked && asked !== table) {
    throw new EnvironmentMismatchError(
      `Cannot create a ${asked} (${environmentLabels[asked]}) key here: this table belongs to the ` +
        `${table} (${environmentLabels[table]}) environment, which takes only rk_${table}_ keys`,
    );
  }
}

export async function createApiKey(
  deps: ApiKeyAdminDeps,
  input: { name: string; roles: Role[]; tier: TierName; environment?: ApiKeyEnvironment },
): Promise<{ apiKey: string; record: PublicApiKeyRecord }> {
  const environment = deps.environment ?? 'local';
  checkKeyEnvironment(environment, input.environment);
  const { apiKey, record } = newApiKeyRecord({ ...input, environment }, deps.now());
  if (deps.edge) {
    const { edgeKeyId } = await deps.edge.createKey({
      name: input.name,
      // The edge key holds the client's usage identifier, derived from the key id, never the secret.
      keyId: record.keyId,
      tier: input.tier,
      clientId: record.clientId,
    });
    record.edgeKeyId = edgeKeyId;
  }
  await deps.repository.create(record);
  return { apiKey, record: publicView(record) };
}

export async function listApiKeys(deps: ApiKeyAdminDeps): Promise<PublicApiKeyRecord[]> {
  return (await deps.repository.list()).map(publicView);
}

async function existing(deps: ApiKeyAdminDeps, keyId: string): Promise<ApiKeyRecord> {
  const record = await deps.repository.get(keyId);
  if (!record) throw new UnknownKeyError(`No API key with id ${keyId}`);
  return record;
}

export async function revokeApiKey(deps: ApiKeyAdminDeps, keyId: string): Promise<PublicApiKeyRecord> {
  const record = await existing(deps, keyId);
  if (deps.edge && record.edgeKeyId) await deps.edge.revoke(record.edgeKeyId);
  const revokedAt = deps.now().toISOString();
  await deps.repository.update(keyId, { status: 'revoked', revokedAt });
  return publicView({ ...record, status: 'revoked', revokedAt });
}

export async function setApiKeyTier(
  deps: ApiKeyAdminDeps,
  keyId: string,
  tier: TierName,
): Promise<PublicApiKeyRecord> {
  const record = await existing(deps, keyId);
  if (deps.edge && record.edgeKeyId && record.tier !== tier)
    await deps.edge.setTier(record.edgeKeyId, record.tier, tier);
  await deps.repository.update(keyId, { tier });
  return publicView({ ...record, tier });
}
