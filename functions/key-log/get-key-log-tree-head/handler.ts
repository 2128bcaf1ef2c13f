import type { CoreDeps } from '../../../lib/app/deps.js';
import type { LogSigningKey } from '../../../lib/crypto/log-signing-key.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { treeHeadSigner } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { getKeyLogTreeHeadRoute as route } from './route.js';

/** GET /api/v1/key-log/tree-head — public: the log's current head, signed under the log key. */
export const createHandler = (deps: CoreDeps & { logKey: LogSigningKey }) => {
  const signedHead = treeHeadSigner(deps.logKey);
  return httpEndpoint(route, deps, async () => ({ data: await signedHead(deps) }));
};

export const handler = awsHandler(route, createHandler);
