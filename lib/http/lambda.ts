import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type { HttpHandler, ServiceContext } from './pipeline.js';

/**
 * The Lambda entry point for one endpoint: its dependencies are built on the first invocation of a
 * cold start and reused; tests and the local server call `createHandler` with their own instead.
 */
export type LambdaEntry = (
  event: APIGatewayProxyEvent,
  context: ServiceContext,
) => Promise<APIGatewayProxyResult>;

export function lambdaHandler(build: () => HttpHandler | Promise<HttpHandler>): LambdaEntry {
  let ready: Promise<HttpHandler> | undefined;
  const init = () => (ready ??= Promise.resolve().then(build));
  // In Lambda, start during the init phase, which runs with a full CPU.
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) init().catch(() => undefined);
  return async (event, context) => (await init())(event, context);
}
