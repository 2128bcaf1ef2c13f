import {
  CreateApiKeyCommand,
  CreateUsagePlanKeyCommand,
  DeleteApiKeyCommand,
  DeleteUsagePlanKeyCommand,
  GetApiKeysCommand,
  GetRestApiCommand,
  GetUsagePlanCommand,
  GetUsagePlanKeyCommand,
  type APIGatewayClient,
} from '@aws-sdk/client-api-gateway';
import { GetParametersCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { edgeUsageKey } from '../../lib/api-keys/edge-authorizer.js';
import { tierNames, usagePlanParameterName, type TierName } from '../../lib/kernel/tiers.js';

/**
 * The edge half of an API key on a deployed stack: an API Gateway key in the usage plan of the key's
 * tier, which enforces the tier's rate, burst and daily quota. Its value is the client's usage
 * identifier (edgeUsageKey), never the secret: the stage takes usage-plan keys from the edge
 * authorizer, which names that identifier once it has checked the presented key by its hash. The
 * store is given the key id only, so the secret cannot reach API Gateway through it.
 */
export interface EdgeKeyInput {
  name: string;
  keyId: string;
  tier: TierName;
  clientId: string;
}

/** An API Gateway key as listed, without its value. */
export interface EdgeKeySummary {
  id: string;
  name: string;
  /** The `clientId` tag the admin CLI puts on every key it creates. */
  clientId?: string;
}

export interface EdgeKeyStore {
  createKey(input: EdgeKeyInput): Promise<{ edgeKeyId: string }>;
  /** The usage-identifier key of a client, created unless it exists, in its tier's plan. */
  ensureUsageKey(input: EdgeKeyInput): Promise<{ edgeKeyId: string }>;
  setTier(edgeKeyId: string, from: TierName, to: TierName): Promise<void>;
  revoke(edgeKeyId: string): Promise<void>;
  /** Every key this account and region holds that the admin CLI tagged with a client id. */
  listClientKeys(): Promise<EdgeKeySummary[]>;
  /** Where the stage's API takes usage-plan keys from: AUTHORIZER once the edge authorizer is deployed. */
  apiKeySource(): Promise<string | undefined>;
}

/** The API Gateway key's name: found again by it, so a retried migration reuses what it created. */
export const edgeKeyName = (keyId: string): string => `receipt-service-${keyId}`;

export type UsagePlanIds = Record<TierName, string>;

export class EdgeKeyError extends Error {}

/** Environment override for a plan id, for operators without ssm:GetParameters. */
export const usagePlanEnvVar = (tier: TierName): string => `USAGE_PLAN_ID_${tier.toUpperCase()}`;

// SDK errors are matched by name: the class identity differs between SDK copies and test doubles.
const isNamed = (error: unknown, name: string): boolean => error instanceof Error && error.name === name;

export class ApiGatewayEdgeKeyStore implements EdgeKeyStore {
  constructor(
    private readonly client: APIGatewayClient,
    private readonly usagePlans: UsagePlanIds,
  ) {}

  async createKey(input: EdgeKeyInput): Promise<{ edgeKeyId: string }> {
    const created = await this.client.send(
      new CreateApiKeyCommand({
        name: edgeKeyName(input.keyId),
        value: edgeUsageKey(input.keyId),
        enabled: true,
        description: `receipt-service client ${input.clientId} (${input.name})`,
        tags: { clientId: input.clientId, keyId: input.keyId },
      }),
    );
    if (!created.id) throw new EdgeKeyError('API Gateway created the key but returned no id');
    try {
      await this.addToPlan(created.id, input.tier);
    } catch (error) {
      // A key in no plan is refused at the edge anyway, but it would linger unseen.
      await this.client.send(new DeleteApiKeyCommand({ apiKey: created.id })).catch(() => undefined);
      throw error;
    }
    return { edgeKeyId: created.id };
  }

  async ensureUsageKey(input: EdgeKeyInput): Promise<{ edgeKeyId: string }> {
    const name = edgeKeyName(input.keyId);
    const found = (await this.allKeys(name)).find((key) => key.name === name);
    if (!found) return this.createKey(input);
    await this.addToPlan(found.id, input.tier);
    return { edgeKeyId: found.id };
  }

  async listClientKeys(): Promise<EdgeKeySummary[]> {
    return (await this.allKeys()).filter((key) => key.clientId !== undefined);
  }

  async apiKeySource(): Promise<string | undefined> {
    // The plans are attached to the stage's API (infra/service-api.ts); any one of them names it.
    const plan = await this.client.send(new GetUsagePlanCommand({ usagePlanId: this.planId('free') }));
    const apiId = plan.apiStages?.[0]?.apiId;
    if (!apiId) throw new EdgeKeyError(`Usage plan ${this.planId('free')} is attached to no API stage`);
    return (await this.client.send(new GetRestApiCommand({ restApiId: apiId }))).apiKeySource;
  }

  /** Values are never asked for: listing keys must not read the secrets old keys may still hold. */
  private async allKeys(nameQuery?: string): Promise<EdgeKeySummary[]> {
    const keys: EdgeKeySummary[] = [];
    let position: string | undefined;
    do {
      const page = await this.client.send(
        new GetApiKeysCommand({ nameQuery, position, limit: 500, includeValues: false }),
      );
      for (const item of page.items ?? []) {
        if (!item.id) continue;
        keys.push({ id: item.id, name: item.name ?? '', clientId: item.tags?.clientId });
      }
      position = page.position;
    } while (position);
    return keys;
  }

  async setTier(edgeKeyId: string, from: TierName, to: TierName): Promise<void> {
    if (from === to) return;
    // API Gateway allows one plan per key and stage, so the old membership must go first.
    await this.removeFromPlan(edgeKeyId, from);
    try {
      await this.addToPlan(edgeKeyId, to);
    } catch (error) {
      // Put the key back on its old tier rather than leave the client locked out.
      await this.addToPlan(edgeKeyId, from).catch(() => undefined);
      throw error;
    }
  }

  async revoke(edgeKeyId: string): Promise<void> {
    try {
      // Deleting the key also ends its plan memberships; a revoked value must never work again.
      await this.client.send(new DeleteApiKeyCommand({ apiKey: edgeKeyId }));
    } catch (error) {
      if (!isNamed(error, 'NotFoundException')) throw error;
    }
  }

  private planId(tier: TierName): string {
    const id = this.usagePlans[tier];
    if (!id) throw new EdgeKeyError(`No usage plan id for tier ${tier}`);
    return id;
  }

  private async addToPlan(keyId: string, tier: TierName): Promise<void> {
    const usagePlanId = this.planId(tier);
    try {
      await this.client.send(new CreateUsagePlanKeyCommand({ usagePlanId, keyId, keyType: 'API_KEY' }));
    } catch (error) {
      // A retried command finds the key already in the plan; anything else in conflict is a real error.
      if (!isNamed(error, 'ConflictException') || !(await this.isInPlan(keyId, usagePlanId))) throw error;
    }
  }

  private async removeFromPlan(keyId: string, tier: TierName): Promise<void> {
    try {
      await this.client.send(new DeleteUsagePlanKeyCommand({ usagePlanId: this.planId(tier), keyId }));
    } catch (error) {
      if (!isNamed(error, 'NotFoundException')) throw error;
    }
  }

  private async isInPlan(keyId: string, usagePlanId: string): Promise<boolean> {
    try {
      await this.client.send(new GetUsagePlanKeyCommand({ usagePlanId, keyId }));
      return true;
    } catch (error) {
      if (isNamed(error, 'NotFoundException')) return false;
      throw error;
    }
  }
}

/**
 * The usage plan ids of a deployed stage: all three from `USAGE_PLAN_ID_<TIER>` when set, otherwise
 * from the SSM parameters the stack wrote.
 */
export async function loadUsagePlanIds(options: {
  stage: string;
  env?: NodeJS.ProcessEnv;
  ssm?: Pick<SSMClient, 'send'>;
}): Promise<UsagePlanIds> {
  const env = options.env ?? process.env;
  const fromEnv = tierNames.map((tier) => [tier, env[usagePlanEnvVar(tier)]?.trim()] as const);
  const given = fromEnv.filter(([, value]) => value);
  if (given.length === tierNames.length) return Object.fromEntries(fromEnv) as UsagePlanIds;
  if (given.length > 0) {
    const missing = fromEnv.filter(([, value]) => !value).map(([tier]) => usagePlanEnvVar(tier));
    throw new EdgeKeyError(`Set every USAGE_PLAN_ID_* variable or none; missing ${missing.join(', ')}`);
  }
  if (!options.ssm) throw new EdgeKeyError('No usage plan ids: set USAGE_PLAN_ID_* or read them from SSM');

  const names = tierNames.map((tier) => usagePlanParameterName(options.stage, tier));
  const result = await options.ssm.send(new GetParametersCommand({ Names: names }));
  const byName = new Map((result.Parameters ?? []).map((parameter) => [parameter.Name, parameter.Value]));
  const missing = names.filter((name) => !byName.get(name));
  if (missing.length > 0) {
    throw new EdgeKeyError(
      `SSM parameters ${missing.join(', ')} not found: is stage "${options.stage}" deployed in this account and region?`,
    );
  }
  return Object.fromEntries(
    tierNames.map((tier) => [tier, byName.get(usagePlanParameterName(options.stage, tier)) as string]),
  ) as UsagePlanIds;
}
