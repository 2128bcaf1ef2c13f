import type { CoreDeps } from '../../../lib/app/deps.js';
import type { LogSigningKey } from '../../../lib/crypto/log-signing-key.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { logPublicKey, treeHeadSigner } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { getKeyLogDocumentRoute as route } from './route.js';

/** GET /api/v1/key-log/tree-head and /public-key — public: the signed head, and the key it verifies under. */
export const createHandler = (deps: CoreDeps & { logKey: LogSigningKey }) => {
  const signedHead = treeHeadSigner(deps.logKey);
  return httpEndpoint(route, deps, async (request) => ({
    data: request.params.document === 'tree-head' ? await signedHead(deps) : await logPublicKey(deps.logKey),
  }));
};

export const handler = awsHandler(route, createHandler);
