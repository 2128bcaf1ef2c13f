import * as z from 'zod';
import { lazySchema } from '../kernel/lazy-schema.js';
import type { ReceiptEnvelope } from '../db/receipts.js';
import type { SameType } from '../kernel/route.js';
import { base64Text, dateTime, uuid } from '../kernel/fields.js';
import { paymentStatusSchema, transactionMappingResponse } from '../transactions/schemas.js';

/*
 * The stored envelope as endpoints answer it (encrypt, the envelope fetches). Closed objects, so the contract
 * tests catch a stored field (a clientId, a TTL) leaking into a response.
 */
const keyBundle = lazySchema(() =>
  z.strictObject({
    encryptedAesKey: base64Text(
      'The AES-256 content key wrapped for keyBundle.keyId: RSA-OAEP-256 ciphertext, or the 40-byte AES-KW ' +
        'output of ECDH-ES+A256KW.',
    ),
    keyId: z.string(),
    algorithm: z.enum(['RSA-OAEP-256', 'ECDH-ES+A256KW']).meta({
      description:
        "The JWE `alg` of this recipient, from its key's type: RSA-OAEP-256 for RSA keys, ECDH-ES+A256KW for P-256 keys.",
    }),
    epk: z
      .strictObject({
        kty: z.literal('EC'),
        crv: z.literal('P-256'),
        x: z.string().meta({ description: 'base64url, 32 bytes.' }),
        y: z.string().meta({ description: 'base64url, 32 bytes.' }),
      })
      .optional()
      .meta({ description: 'ECDH-ES+A256KW only: the ephemeral public key of this receipt (JWK).' }),
  }),
);

const envelopeFields = {
  version: z.string().meta({ description: 'Receipt schema version.' }),
  receiptId: uuid,
  keyId: z
    .string()
    .meta({ description: "The recipient's keyId, or the escrow key id when isEscrowed is true." }),
  keyBundle,
  ciphertext: base64Text('AES-256-GCM ciphertext of the JSON DigitalReceipt.'),
  iv: base64Text('12-byte GCM initialisation vector.'),
  authTag: base64Text('16-byte GCM authentication tag.'),
  protected: z.string().meta({
    description:
      'base64url JWE protected header ({"enc":"A256GCM", version, receiptId, merchantId, transactionId, ' +
      'keyCommitment}); its ASCII bytes are the GCM additional data, so swapped fields do not decrypt. Envelopes ' +
      'stored before per-recipient algorithms also carry "alg":"RSA-OAEP-256" here.',
  }),
  merchantId: uuid,
  transactionId: uuid,
  createdAt: dateTime,
  isEscrowed: z
    .boolean()
    .meta({ description: 'True when no registered user matched and the escrow key was used.' }),
};

export const encryptedEnvelopeResponse = lazySchema(() =>
  z
    .strictObject({
      ...envelopeFields,
      expiresAt: dateTime.meta({
        description:
          'End of retention: 90 days for escrowed receipts (unless claimed), about 7 years otherwise.',
      }),
      escrowKeyId: z
        .string()
        .nullable()
        .meta({ description: 'The escrow key id when isEscrowed is true, else null.' }),
    })
    .meta({
      id: 'EncryptedReceiptEnvelope',
      description:
        'An encrypted receipt. Decrypt it with receipts/decrypt, or with any JOSE library as a flattened JWE after ' +
        'converting ciphertext, iv, authTag and keyBundle.encryptedAesKey from base64 to base64url and, unless the ' +
        'protected header has alg, adding the per-recipient header {alg: keyBundle.algorithm, epk: keyBundle.epk} ' +
        '(docs/ENVELOPE.md).',
    }),
);

export const flattenedEnvelopeResponse = lazySchema(() =>
  z.strictObject(envelopeFields).meta({
    id: 'FlattenedEncryptedReceiptEnvelope',
    description:
      'The envelope as answered to the flattened encrypt form: the spec shows it without expiresAt and escrowKeyId. ' +
      'It is otherwise identical and is accepted wherever an envelope is.',
  }),
);

type FlattenedEnvelope = Omit<ReceiptEnvelope, 'expiresAt' | 'escrowKeyId'>;
export const envelopeTypesMatch: [
  SameType<z.output<typeof encryptedEnvelopeResponse>, ReceiptEnvelope>,
  SameType<z.output<typeof flattenedEnvelopeResponse>, FlattenedEnvelope>,
] = [true, true];

/** An envelope fetched by receiptId or by payment, with the mapping that points to it. */
export const fetchedReceiptSchema = lazySchema(() =>
  z
    .strictObject({
      envelope: encryptedEnvelopeResponse,
      mapping: transactionMappingResponse.nullable().meta({
        description: 'The transaction mapping that points to this receipt, or null when there is none.',
      }),
      paymentStatus: paymentStatusSchema,
      relatedReceiptId: uuid.nullable().meta({
        description: 'A refund receipt: the receiptId of the sale it refunds. null for any other receipt.',
      }),
    })
    .meta({
      id: 'FetchedReceipt',
      description:
        "A stored envelope, as encrypt answered it, for decryption on the recipient's device (the private key never " +
        'leaves it), with its transaction mapping.',
    }),
);
