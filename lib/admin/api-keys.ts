import { newApiKeyRecord } from '../api-key-auth.js';
import type { ApiKeyRecord, ApiKeyRepository } from '../db/api-keys.js';
import type { Role } from '../routes.js';
import type { TierName } from '../tiers.js';
import type { EdgeKeyStore } from './api-gateway-keys.js';

/**
 * API key administration, shared by the CLI for the local stack and for a deployed one; on a
 * deployed stack the same key also exists at the edge (API Gateway key + usage-plan membership).
 */
export interface ApiKeyAdminDeps {
  repository: ApiKeyRepository;
  /** Present only against a deployed stack. */
  edge?: EdgeKeyStore;
  now: () => Date;
}

export type PublicApiKeyRecord = Omit<ApiKeyRecord, 'secretHash'>;

const publicView = ({ secretHash: _secretHash, ...rest }: ApiKeyRecord): PublicApiKeyRecord => rest;

export class UnknownKeyError extends Error {}

export async function createApiKey(
  deps: ApiKeyAdminDeps,
  input: { name: string; roles: Role[]; tier: TierName },
): Promise<{ apiKey: string; record: PublicApiKeyRecord }> {
  const { apiKey, record } = newApiKeyRecord(input, deps.now());
  if (deps.edge) {
    const { edgeKeyId } = await deps.edge.createKey({
      name: input.name,
      value: apiKey,
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
