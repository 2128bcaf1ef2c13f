import type { CoreDeps } from '../../../lib/app/deps.js';
import { httpEndpoint } from '../../../lib/http/pipeline.js';
import { logEntries } from '../../../lib/key-log/reads.js';
import { awsHandler } from '../../../lib/wiring/aws.js';
import { listKeyLogEntriesRoute as route } from './route.js';

/** GET /api/v1/key-log/entries — public: a bounded page of the log's leaves. */
export const createHandler = (deps: CoreDeps) =>
  httpEndpoint(route, deps, async (request) => ({
    data: await logEntries(deps, { start: request.query.start, end: request.query.end }),
  }));

export const handler = awsHandler(route, createHandler);
