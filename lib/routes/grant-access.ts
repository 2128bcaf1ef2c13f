import * as z from 'zod';
import { defineRoute } from '../contract/route.js';
import { accessTokenResponse } from '../openapi/responses.js';
import { uuid } from '../receipts/schemas.js';
import { noStore, platformTables } from './platform.js';

export const grantAccessBody = z
  .strictObject({ userId: uuid, keyId: uuid })
  .meta({ id: 'GrantAccessRequest' });

export const grantAccessRoute = defineRoute({
  name: 'grant-access',
  method: 'POST',
  path: '/api/v1/keys/grant-access',
  entry: 'functions/grant-access/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, users: 'read', accessTokens: 'readWrite' },
  docs: {
    tag: 'keys',
    summary: 'Grant a short-lived decrypt token',
    description:
      "Step 4, after the issuer application has collected the user's consent (biometric or PIN). The token is " +
      'bound to the user, its registered key and purpose `decrypt`, lives 180 s by default (120 to 180 s), and ' +
      "may be used for several decrypts until it expires. At most 5 tokens are active per user. The caller's " +
      `source IP is audited. ${noStore}`,
  },
  request: { body: { description: 'The user and its registered key.', schema: grantAccessBody } },
  response: { description: 'The token.', schema: accessTokenResponse, enveloped: true },
  errors: {
    403: {
      description:
        "An unknown user, a user of another client, or a keyId that is not the user's key: refused alike.",
      codes: ['GRANT_ERROR'],
    },
    429: {
      description: 'Rate limit exceeded, or (GRANT_ERROR) the user already holds 5 active tokens.',
      codes: ['GRANT_ERROR'],
    },
  },
});
