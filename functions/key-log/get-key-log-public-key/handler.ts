import type { CoreDeps } from '../../../lib/app/deps.js';
import type { LogSigningKey } from '../../../lib/crypto/log-signing-key.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { logPublicKey } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { getKeyLogPublicKeyRoute as route } from './route.js';

/** GET /api/v1/key-log/public-key — public: the key the log's tree heads verify under. */
export const createHandler = (deps: CoreDeps & { logKey: LogSigningKey }) =>
  httpEndpoint(route, deps, async () => ({ data: await logPublicKey(deps.logKey) }));

export const handler = awsHandler(route, createHandler);
