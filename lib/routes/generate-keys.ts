import { defineRoute } from '../contract/route.js';
import { keyPairResponse } from '../openapi/responses.js';
import { platformTables } from './platform.js';

export const generateKeysRoute = defineRoute({
  name: 'generate-keys',
  method: 'POST',
  path: '/api/v1/onboarding/generate-keys',
  entry: 'functions/generate-keys/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, keyPairs: 'write' },
  rateGroup: 'keyGeneration',
  memoryMb: 1024,
  docs: {
    tag: 'onboarding',
    summary: 'Generate an RSA-2048 key pair',
    description:
      'Step 1 of the flow. No request body (any body sent is ignored). Only the public half is stored; the ' +
      'private key is in this response and nowhere else, so the client must keep it.',
  },
  request: {},
  response: { description: 'The new key pair.', schema: keyPairResponse, enveloped: true },
  errors: { 500: { description: 'Key generation failed.', codes: ['KEY_GENERATION_FAILED'] } },
});
