import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import { authorizeEdge, type EdgeAuthorizerDeps } from '../../../lib/api-keys/edge-authorizer.js';
import { awsEdgeAuthorizerDeps } from '../../../lib/wiring/aws-edge-authorizer.js';

/**
 * API Gateway's REQUEST authorizer for every keyed method (not an HTTP route: it has no path of its
 * own). Verifies X-API-Key by its hash and hands API Gateway the client's usage identifier.
 */
export const createHandler =
  (deps: EdgeAuthorizerDeps) =>
  (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> =>
    authorizeEdge(event, deps);

let authorize: ReturnType<typeof createHandler> | undefined;

export const handler = (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> =>
  (authorize ??= createHandler(awsEdgeAuthorizerDeps()))(event);
