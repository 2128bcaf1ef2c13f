import type { APIGatewayAuthorizerResult, APIGatewayRequestAuthorizerEvent } from 'aws-lambda';
import type { ApiKeyAuthenticator } from './authenticator.js';
import { UnauthorizedError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';

/**
 * The API Gateway edge of a deployed stage. The REST API takes usage-plan keys from this authorizer
 * (API key source AUTHORIZER), not from the X-API-Key header: the authorizer checks the presented key
 * against its hash in the api-keys table, and answers with the client's usage identifier, which is
 * what the client's API Gateway key holds. That key's value is therefore never the client's secret,
 * and anyone allowed apigateway:GET reads identifiers that open nothing: API Gateway accepts a usage
 * identifier only from the authorizer, never from a caller.
 */

/** The header the identity source names; API Gateway answers 401 itself when it is missing. */
export const EDGE_API_KEY_HEADER = 'X-API-Key';

/** How long API Gateway keeps an answer per X-API-Key value (the authorizer's result cache). */
export const EDGE_AUTHORIZER_CACHE_SECONDS = 300;

/**
 * The value of a client's API Gateway key: derived from the key id, which is no secret (it is part of
 * every presented key and of `api-keys list`). Being predictable gives nothing: only the authorizer
 * can name a usage identifier, and it names one only for a verified key. Derived rather than stored,
 * so records need no new field and the admin CLI can find the edge key a record should have.
 */
export const edgeUsageKey = (keyId: string): string => `receipt-service-usage-${keyId}`;

export interface EdgeAuthorizerDeps {
  authenticator: Pick<ApiKeyAuthenticator, 'authenticate'>;
  logger: Logger;
}

/** The refusal the gateway response shows when the key is unknown, revoked or malformed. */
export const INVALID_KEY_MESSAGE = 'Missing or invalid API key';

/**
 * The authorizer's answer is cached per key value and reused for every method of the stage, so the
 * policy names them all: a policy for one method alone would refuse the same key on the next route.
 */
function stageWildcard(methodArn: string): string {
  const [apiArn, stage] = methodArn.split('/');
  return `${apiArn}/${stage}/*/*`;
}

function headerValue(event: APIGatewayRequestAuthorizerEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  const entry = Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === wanted);
  return entry?.[1] ?? undefined;
}

/** Gateway responses place the message inside a JSON string without escaping it. */
const templateSafe = (message: string): string => message.replace(/["\\\r\n]/g, ' ');

const policy = (
  effect: 'Allow' | 'Deny',
  methodArn: string,
): APIGatewayAuthorizerResult['policyDocument'] => ({
  Version: '2012-10-17',
  Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: stageWildcard(methodArn) }],
});

/**
 * Allow with the client's usage identifier, or Deny with the reason as context.message (the
 * ACCESS_DENIED gateway response turns it into 401 `unauthorized`). A Deny is cached like an Allow,
 * so a wrong key repeated within the cache lifetime costs no invocation. Anything else, such as the
 * table being unreachable, is thrown: API Gateway answers it as AUTHORIZER_FAILURE and caches nothing.
 */
export async function authorizeEdge(
  event: APIGatewayRequestAuthorizerEvent,
  deps: EdgeAuthorizerDeps,
): Promise<APIGatewayAuthorizerResult> {
  const deny = (reason: string, message: string): APIGatewayAuthorizerResult => {
    // API Gateway's request id: the X-Request-Id of the 401 the client sees, and of the request's other lines.
    deps.logger.info('edge key refused', { reason, requestId: event.requestContext?.requestId });
    return {
      principalId: 'anonymous',
      policyDocument: policy('Deny', event.methodArn),
      context: { message: templateSafe(message) },
    };
  };

  let caller;
  try {
    caller = await deps.authenticator.authenticate(headerValue(event, EDGE_API_KEY_HEADER));
  } catch (error) {
    // A key of another environment: 401 that names whose key it is.
    if (error instanceof UnauthorizedError) return deny('foreign_environment', error.message);
    throw error;
  }
  if (!caller) return deny('invalid_key', INVALID_KEY_MESSAGE);
  return {
    principalId: caller.clientId,
    policyDocument: policy('Allow', event.methodArn),
    usageIdentifierKey: edgeUsageKey(caller.keyId),
    context: { clientId: caller.clientId, keyId: caller.keyId, tier: caller.tier },
  };
}
