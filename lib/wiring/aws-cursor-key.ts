import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import { ConfigError } from '../kernel/config.js';
import { CursorKeyError, type CursorKeySource } from '../crypto/cursor.js';

/**
 * The paging cursors' key in AWS: a Secrets Manager secret CloudFormation generated
 * (infra/cursor-secret.ts), read once per cold start (CursorCodec keeps it) by the functions that
 * page, the only ones granted it. Its value is the generated text; the AES key is derived from it.
 */
export function awsCursorKey(env: NodeJS.ProcessEnv = process.env): CursorKeySource {
  return {
    async load(): Promise<string> {
      const name = env.CURSOR_SECRET_NAME;
      if (!name) throw new ConfigError('CURSOR_SECRET_NAME is not set for a function that pages');
      const value = await getSecret<string>(name);
      if (typeof value !== 'string') throw new CursorKeyError('cursor key secret is not a string');
      return value;
    },
  };
}
