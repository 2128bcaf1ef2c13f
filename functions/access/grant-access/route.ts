import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { uuid } from '../../../lib/kernel/fields.js';
import { noStore, platformTables } from '../../../lib/kernel/route-tables.js';
import type { AccessToken } from '../../../lib/access/tokens.js';
import { dateTime } from '../../../lib/kernel/fields.js';
import type { SameType } from '../../../lib/kernel/route.js';
import { grantAccessBody } from '../../../lib/access/schemas.js';

export const accessTokenResponse = lazySchema(() =>
  z
    .strictObject({
      tokenId: uuid.meta({
        description: 'Send as `accessTokenId` in decrypt calls. Shown once; stored only as a hash.',
      }),
      userId: uuid,
      keyId: uuid,
      purpose: z.literal('decrypt'),
      grantedAt: dateTime,
      expiresAt: dateTime.meta({ description: '120 to 180 seconds after grantedAt (180 by default).' }),
      sourceIp: z.string().meta({ description: 'IP address of the caller, recorded in the audit log.' }),
    })
    .meta({
      id: 'AccessToken',
      description: 'A short-lived decrypt token for one user and its registered key.',
    }),
);

export const responseTypeMatches: SameType<z.output<typeof accessTokenResponse>, AccessToken> = true;

export const grantAccessRoute = defineRoute({
  name: 'grant-access',
  method: 'POST',
  path: '/api/v1/keys/grant-access',
  entry: 'functions/access/grant-access/handler.ts',
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
    details:
      "Issuer, after the user's consent. `{ userId, keyId }` → `{ tokenId, userId, keyId, purpose: " +
      '"decrypt", grantedAt, expiresAt, sourceIp }`. The token lives 180 s (configurable from 120 to ' +
      '180), is bound to the user, its key and the purpose `decrypt`, and can be used for several ' +
      'decrypts until it expires. A user has at most 5 live tokens: a 6th is `429 GRANT_ERROR` with ' +
      "`Retry-After`. A user of another client, an unknown user, or a `keyId` that is not the user's " +
      "key: `403 GRANT_ERROR`, the same for each. The caller's source IP is recorded in the audit log.",
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
