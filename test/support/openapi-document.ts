import { buildOpenApiDocument } from '../../lib/openapi/document.js';
import { routes } from '../../functions/routes.js';

/**
 * The OpenAPI document every response of the tests is checked against, as JSON: built once for the
 * run by test/support/global-setup.js (one module graph, so the routes' schemas and the builder share
 * one zod), read by each file's validator (test/support/contract.ts). Building it took each test file
 * that starts a stack about 0.1 s of CPU.
 */
export const openApiDocumentJson = (): string => JSON.stringify(buildOpenApiDocument(routes));
