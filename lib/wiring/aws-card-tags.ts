import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import { ConfigError } from '../kernel/config.js';
import {
  CardTagKeyError,
  parseCardTagVersions,
  type CardTagKeySource,
  type CardTagKeyVersion,
} from '../crypto/card-tag.js';

/**
 * The card-tag key in AWS: a Secrets Manager secret, encrypted under a customer-managed KMS key, read
 * once per cold start and again every 5 minutes (Powertools caches it), so tagging a card on the
 * encrypt path is an HMAC in memory. KMS GenerateMac would keep the key out of the function's memory
 * but cost a KMS call (and its latency and quota) on every encrypt; docs/THREAT-MODEL.md weighs the two.
 * The secret's value is formatCardTagVersions' JSON.
 */
export function awsCardTagKeys(env: NodeJS.ProcessEnv = process.env): CardTagKeySource {
  return {
    async load(): Promise<CardTagKeyVersion[]> {
      const name = env.CARD_TAG_SECRET_NAME;
      if (!name) throw new ConfigError('CARD_TAG_SECRET_NAME is not set for a function that tags cards');
      const value = await getSecret<string>(name, { maxAge: 300 });
      if (typeof value !== 'string') throw new CardTagKeyError('card-tag secret is not a string');
      return parseCardTagVersions(value);
    },
  };
}
