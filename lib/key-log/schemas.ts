import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';

/*
 * The key log's public answers (DECISIONS, Round 4, "Key transparency and presentable receipts";
 * docs/API.md, "Key transparency").
 */

/** A tree size or leaf index from a query string: a whole number, at most 2^53 − 1. */
export const logSize = (field: string) => {
  const message = `${field} must be a whole number, 0 or more`;
  return z.coerce.number({ message }).int(message).min(0, message).max(Number.MAX_SAFE_INTEGER, message);
};

/** A merchant signing key's kid (its RFC 7638 thumbprint), as lib/merchants names it. */
const kidSchema = lazySchema(() =>
  z.string().meta({ description: "The key's RFC 7638 thumbprint (SHA-256, base64url)." }),
);

const hash = lazySchema(() => z.string().meta({ description: 'A SHA-256 hash, base64 (44 characters).' }));

export const keyLogLeafSchema = lazySchema(() =>
  z
    .strictObject({
      index: z.number().int().min(0).meta({ description: "The leaf's position in the log, from 0." }),
      merchantClientId: z.string().meta({ description: 'The merchant client the key is (or was) under.' }),
      kid: kidSchema,
      jwk: z.record(z.string(), z.string()).meta({
        description:
          'The public key as registered: `{ kty, crv, x }` (Ed25519) or `{ kty, crv, x, y }` (P-256).',
      }),
      event: z.enum(['registered', 'revoked']),
      at: z.string().meta({ description: 'When the event happened (ISO 8601).' }),
    })
    .meta({
      id: 'KeyLogLeaf',
      description:
        'One key event. The leaf hashed into the tree is the RFC 8785 (JCS) JSON of this object: SHA-256(0x00 ‖ JCS).',
    }),
);

export const treeHeadSchema = lazySchema(() =>
  z
    .strictObject({
      treeSize: z.number().int().min(0),
      rootHash: hash,
      timestamp: z.number().int().meta({ description: 'When the head was signed, in epoch milliseconds.' }),
      signature: z.string().meta({
        description:
          'The compact JWS (ES256, `typ: tree-head+jws`) of `{ treeSize, rootHash, timestamp }` under the log key ' +
          '(GET /api/v1/key-log/public-key): trust the payload it signs, not the fields beside it.',
      }),
    })
    .meta({ id: 'SignedTreeHead', description: "The key log's current signed tree head." }),
);

export const keyLogEntriesSchema = lazySchema(() =>
  z
    .strictObject({
      start: z.number().int(),
      end: z.number().int(),
      entries: z.array(keyLogLeafSchema).meta({ description: 'Leaves start to end − 1, in order.' }),
    })
    .meta({ id: 'KeyLogEntries' }),
);

export const kidInclusionSchema = lazySchema(() =>
  z
    .strictObject({
      kid: kidSchema,
      treeSize: z.number().int(),
      entries: z
        .array(
          z.strictObject({
            leaf: keyLogLeafSchema,
            proof: z.array(hash).meta({ description: 'RFC 9162 §2.1.3 audit path, leaf end first.' }),
          }),
        )
        .meta({ description: 'Every leaf naming the kid in the tree of treeSize leaves, oldest first.' }),
    })
    .meta({ id: 'KidInclusionProof' }),
);

export const consistencyProofSchema = lazySchema(() =>
  z
    .strictObject({
      first: z.number().int(),
      second: z.number().int(),
      proof: z.array(hash).meta({ description: 'RFC 9162 §2.1.4 consistency proof.' }),
    })
    .meta({ id: 'ConsistencyProof' }),
);

export const logPublicKeySchema = lazySchema(() =>
  z
    .strictObject({
      kty: z.literal('EC'),
      crv: z.literal('P-256'),
      x: z.string(),
      y: z.string(),
      kid: z.string(),
      alg: z.literal('ES256'),
      use: z.literal('sig'),
    })
    .meta({
      id: 'LogPublicKey',
      description: "The log signing key's public JWK: tree heads verify under it.",
    }),
);
