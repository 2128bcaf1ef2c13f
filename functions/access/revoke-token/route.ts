import * as z from 'zod';
import { lazySchema } from '../../../lib/kernel/lazy-schema.js';
import { defineRoute } from '../../../lib/kernel/route.js';
import { dateTime, uuid } from '../../../lib/kernel/fields.js';
import { platformTables } from '../../../lib/kernel/route-tables.js';

export const revokeTokenParams = lazySchema(() => z.object({ tokenId: uuid }));

export const tokenRevocationResponse = lazySchema(() =>
  z
    .strictObject({ userId: uuid, keyId: uuid, revokedAt: dateTime })
    .meta({ id: 'TokenRevocation', description: 'The user and key the revoked token was for.' }),
);

export const revokeTokenRoute = defineRoute({
  name: 'revoke-token',
  method: 'DELETE',
  path: '/api/v1/keys/tokens/{tokenId}',
  entry: 'functions/access/revoke-token/handler.ts',
  apiKeyRequired: true,
  roles: ['issuer'],
  tables: { ...platformTables, accessTokens: 'readWrite' },
  docs: {
    tag: 'keys',
    summary: 'Revoke a decrypt token',
    description:
      'The token stops working at once and frees its place among the 5 live tokens of its user. Only the ' +
      'client it was granted to may revoke it. Audited.',
    details:
      'Issuer, for a token granted to it. No body. → `{ userId, keyId, revokedAt }`. The token and its ' +
      'slot are deleted in one transaction: the token is refused from that moment (the uniform `403`) ' +
      'and the user may be granted another at once. A token of another client, an unknown one and one ' +
      'already revoked are the same `404 not_found`; a `tokenId` that is not a UUID is `400`. Audited ' +
      '(`access.revoke`). The token id is part of the path, so send it only over TLS to the service ' +
      'and keep it out of your own access logs.',
  },
  request: { params: revokeTokenParams },
  response: { description: 'The revocation.', schema: tokenRevocationResponse, enveloped: true },
  errors: {
    404: { description: 'No such token (or already revoked), or a token of another client: refused alike.' },
  },
});
