import type { ApiKeyRecord } from '../../lib/db/api-keys.js';
import type { EdgeKeyStore } from './api-gateway-keys.js';

/**
 * Moves a deployed stage's clients from API Gateway keys whose value was the client's whole API key
 * (made before the edge authorizer) to keys holding the client's usage identifier, then deletes the
 * old ones. Two runs, around the deploy that switches the API to the authorizer:
 *
 * 1. before it: every active key gets its usage-identifier key in its tier's plan, and its record
 *    points at it; the old key stays, so clients keep passing the edge of the stage still deployed;
 * 2. after it (`deleteOld`): the old keys, which hold secrets in plaintext, are deleted. Refused while
 *    the API still reads keys from the header, since that would lock every client out.
 *
 * Both runs may be repeated: a usage-identifier key is found again by its name.
 */
export interface EdgeMigrationDeps {
  repository: {
    list(): Promise<ApiKeyRecord[]>;
    update(keyId: string, changes: { edgeKeyId: string }): Promise<boolean>;
  };
  edge: EdgeKeyStore;
}

export interface EdgeMigrationReport {
  /** Records now pointing at a new usage-identifier key. */
  moved: { keyId: string; edgeKeyId: string; previousEdgeKeyId?: string }[];
  /** Records whose edge key was already the usage-identifier key. */
  unchanged: string[];
  /** Old API Gateway keys of this table's clients (ids only): deleted with deleteOld, listed otherwise. */
  oldKeys: string[];
  deleted: boolean;
}

export class EdgeMigrationError extends Error {}

export async function migrateEdgeKeys(
  deps: EdgeMigrationDeps,
  options: { deleteOld: boolean },
): Promise<EdgeMigrationReport> {
  if (options.deleteOld) {
    const source = await deps.edge.apiKeySource();
    if (source !== 'AUTHORIZER') {
      throw new EdgeMigrationError(
        `The stage's API takes usage-plan keys from ${source ?? 'the header'}, not from the edge authorizer: ` +
          'deleting the old keys now would refuse every client. Deploy the stack first, then run this again.',
      );
    }
  }

  const records = await deps.repository.list();
  const active = records.filter((record) => record.status === 'active');
  const report: EdgeMigrationReport = { moved: [], unchanged: [], oldKeys: [], deleted: false };
  const currentByClient = new Map<string, string>();
  for (const record of active) {
    const { edgeKeyId } = await deps.edge.ensureUsageKey({
      name: record.name,
      keyId: record.keyId,
      tier: record.tier,
      clientId: record.clientId,
    });
    currentByClient.set(record.clientId, edgeKeyId);
    if (record.edgeKeyId === edgeKeyId) {
      report.unchanged.push(record.keyId);
      continue;
    }
    await deps.repository.update(record.keyId, { edgeKeyId });
    report.moved.push({
      keyId: record.keyId,
      edgeKeyId,
      ...(record.edgeKeyId ? { previousEdgeKeyId: record.edgeKeyId } : {}),
    });
  }

  // Only keys the CLI tagged with one of this table's clients: other stages' keys are never touched.
  const clients = new Set(records.map((record) => record.clientId));
  report.oldKeys = (await deps.edge.listClientKeys())
    .filter((key) => key.clientId !== undefined && clients.has(key.clientId))
    .filter((key) => currentByClient.get(key.clientId as string) !== key.id)
    .map((key) => key.id);
  if (options.deleteOld) {
    for (const id of report.oldKeys) await deps.edge.revoke(id);
    report.deleted = true;
  }
  return report;
}
