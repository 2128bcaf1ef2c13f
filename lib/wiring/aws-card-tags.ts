import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import { ConfigError } from '../config.js';
import {
  CardTagKeyError,
  formatCardTagVersions,
  parseCardTagVersions,
  withNewVersion,
  type CardTagKeySource,
  type CardTagKeyStore,
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

/**
 * The operator's side (`npm run admin -- card-key rotate --aws`): reads the secret and writes it back
 * with one more version. Functions see it within their 5-minute cache.
 */
export async function awsCardTagKeyStore(region: string, secretName: string): Promise<CardTagKeyStore> {
  const { GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } =
    await import('@aws-sdk/client-secrets-manager');
  const client = new SecretsManagerClient({ region });
  const load = async (): Promise<CardTagKeyVersion[]> => {
    const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: secretName }));
    if (!SecretString) throw new CardTagKeyError('card-tag secret has no string value');
    return parseCardTagVersions(SecretString);
  };
  return {
    load,
    async addVersion() {
      const versions = withNewVersion(await load());
      await client.send(
        new PutSecretValueCommand({
          SecretId: secretName,
          SecretString: formatCardTagVersions(versions),
        }),
      );
      return versions[versions.length - 1]!.version;
    },
  };
}
