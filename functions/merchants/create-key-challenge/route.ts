import { defineRoute } from '../../../lib/kernel/route.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';
import { keyChallengeSchema } from '../../../lib/merchants/schemas.js';

export const createKeyChallengeRoute = defineRoute({
  name: 'create-key-challenge',
  method: 'POST',
  path: '/api/v1/merchants/signing-keys/challenges',
  entry: 'functions/merchants/create-key-challenge/handler.ts',
  apiKeyRequired: true,
  roles: ['merchant'],
  tables: { ...platformTables, merchantKeys: 'readWrite' },
  docs: {
    tag: 'merchants',
    summary: 'Get a nonce for a signing-key proof',
    description:
      'A single-use nonce, valid five minutes, for this merchant client: sign it into the `proof` of a key ' +
      'registration (by the new key) or into a `Key-Change-Proof` (by an active key) for adding a key, revoking ' +
      'one or no longer requiring signatures. Spent by the first request that carries it, whether or not the ' +
      'rest of that request succeeds.',
  },
  request: {},
  response: { description: 'The challenge.', schema: keyChallengeSchema, enveloped: true, status: 201 },
  errors: {},
});
