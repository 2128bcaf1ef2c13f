import * as z from 'zod';
import type { ReceiptEnvelope } from '../db/receipts.js';
import type { HealthReport } from '../health.js';
import type { PaymentResult } from '../payments/create.js';
import type { AccessToken } from '../receipts/access.js';
import type { GeneratedKeyPair, ImportedKey } from '../receipts/onboarding.js';
import { dateTime, digitalReceiptSchema, uuid } from '../receipts/schemas.js';
import type { TransactionMapping } from '../receipts/transactions.js';

/**
 * Zod schemas for what the endpoints answer. The handlers return plain TypeScript values, so these
 * exist for the contract only; the type checks at the bottom of this file keep them equal to the
 * types the handlers actually return, so the document cannot drift from the code unnoticed.
 *
 * Response objects are closed (`additionalProperties: false`): the contract tests then catch a field
 * leaking from a stored record (a clientId, a TTL) into a response. Clients must still ignore
 * unknown fields, because adding an optional field is a non-breaking change under the versioning rules.
 */
const base64 = (description: string) => z.string().meta({ description, contentEncoding: 'base64' });

export const keyPairResponse = z
  .strictObject({
    keyId: uuid.meta({
      description: 'Identifier of the pair; sent back as `keyId` to register and grant-access.',
    }),
    publicKey: base64('Base64 DER SubjectPublicKeyInfo of the RSA-2048 public key.'),
    privateKey: base64(
      'Base64 DER PKCS#8 private key. Returned only in this response and never stored by the service.',
    ),
    algorithm: z.literal('RSA-OAEP-256'),
  })
  .meta({ id: 'KeyPair', description: 'A freshly generated RSA-2048 key pair.' });

export const importedKeyResponse = z
  .strictObject({
    keyId: uuid.meta({
      description: 'Send as `keyId` to register or rotate-user-key, like a generated one.',
    }),
    publicKey: base64('The key as canonical base64 DER SubjectPublicKeyInfo, whatever form it was sent in.'),
    algorithm: z.enum(['RSA-OAEP-256', 'ECDH-ES+A256KW']).meta({
      description:
        'How receipts are wrapped for this key, from its type: RSA keys RSA-OAEP-256, P-256 keys ECDH-ES+A256KW.',
    }),
  })
  .meta({ id: 'ImportedKey', description: 'A public key imported from a device. There is no private key.' });

export const userResponse = z
  .strictObject({
    userId: uuid,
    status: z.literal('active'),
    registeredAt: dateTime,
  })
  .meta({ id: 'User', description: 'A registered user. The hashed PAN is never echoed back.' });

export const accessTokenResponse = z
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
  });

const keyBundle = z.strictObject({
  encryptedAesKey: base64(
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
});

const envelopeFields = {
  version: z.string().meta({ description: 'Receipt schema version.' }),
  receiptId: uuid,
  keyId: z
    .string()
    .meta({ description: "The recipient's keyId, or the escrow key id when isEscrowed is true." }),
  keyBundle,
  ciphertext: base64('AES-256-GCM ciphertext of the JSON DigitalReceipt.'),
  iv: base64('12-byte GCM initialisation vector.'),
  authTag: base64('16-byte GCM authentication tag.'),
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

export const encryptedEnvelopeResponse = z
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
  });

export const flattenedEnvelopeResponse = z.strictObject(envelopeFields).meta({
  id: 'FlattenedEncryptedReceiptEnvelope',
  description:
    'The envelope as answered to the flattened encrypt form: the spec shows it without expiresAt and escrowKeyId. ' +
    'It is otherwise identical and is accepted wherever an envelope is.',
});

export const transactionMappingResponse = z
  .strictObject({
    mappingId: uuid,
    transactionId: uuid,
    receiptId: uuid,
    paymentGateway: z.enum(['gateway_a', 'gateway_b', 'other']).meta({
      description:
        'Always the neutral name: the aliases stripe and square are stored as gateway_a and gateway_b.',
    }),
    gatewayMetadata: z.record(z.string(), z.unknown()),
    createdAt: dateTime,
  })
  .meta({
    id: 'TransactionMapping',
    description: 'The link between a payment transaction and its encrypted receipt.',
  });

export const paymentResultResponse = z
  .strictObject({
    paymentId: z
      .string()
      .meta({ description: "The gateway's payment identifier; send it to payments/decrypt." }),
    clientSecret: z.string().nullable().meta({
      description: 'gateway_a payment-intent client secret for confirming on the client; null for gateway_b.',
    }),
    orderId: z.string().nullable().meta({ description: 'gateway_b order id; null for gateway_a.' }),
    gateway: z
      .enum(['gateway_a', 'gateway_b'])
      .meta({ description: 'The gateway kind; send it to payments/decrypt.' }),
    receiptMetadata: z
      .strictObject({ receiptId: uuid, transactionId: uuid, merchantId: uuid, isEscrowed: z.boolean() })
      .meta({
        description: 'The pointers attached to the payment; the receipt itself stays with the service.',
      }),
  })
  .meta({
    id: 'PaymentResult',
    description: 'A payment created on the gateway with its encrypted receipt attached.',
  });

const dependencyStatus = z
  .strictObject({
    status: z.enum(['up', 'down']),
    latencyMs: z.number().int().min(0),
    detail: z
      .string()
      .optional()
      .meta({ description: 'Why it is down: an error name or "timed out", never a message.' }),
  })
  .meta({ id: 'DependencyStatus' });

export const healthReportResponse = z
  .strictObject({
    status: z.enum(['ok', 'degraded']),
    stage: z.string(),
    time: dateTime,
    dependencies: z.record(z.string(), dependencyStatus).meta({
      description: 'dynamodb, escrowKey and each configured gateway (gateway_a, gateway_b).',
    }),
  })
  .meta({ id: 'HealthReport', description: 'Every dependency checked in parallel, 3 s timeout each.' });

/** The plaintext receipt both decrypt endpoints answer: the very schema encrypt validates with. */
export const digitalReceiptResponse = digitalReceiptSchema;

export const openApiDocumentResponse = z
  .object({
    openapi: z.string(),
    info: z.record(z.string(), z.unknown()),
    paths: z.record(z.string(), z.unknown()),
  })
  .meta({
    id: 'OpenApiDocument',
    description: 'This OpenAPI 3.1 document, sent as it is (not in the success envelope).',
  });

export const errorEnvelope = z
  .strictObject({
    success: z.literal(false),
    error: z.strictObject({
      code: z.string().meta({
        description:
          'Machine-readable. Endpoint codes are upper case (INVALID_REQUEST, DECRYPTION_ERROR, GRANT_ERROR, ...), ' +
          'platform codes lower case (unauthorized, not_found, ...). New codes may be added.',
      }),
      message: z.string().meta({ description: 'Human-readable; never carries a stack trace or a secret.' }),
      details: z.record(z.string(), z.unknown()).optional().meta({
        description: 'Free-form. Validation errors list every bad field as details.fields[{field, message}].',
      }),
      timestamp: dateTime,
      request_id: z
        .string()
        .meta({ description: 'Equal to the X-Request-Id header; quote it when reporting a problem.' }),
    }),
  })
  .meta({
    id: 'ErrorEnvelope',
    description: 'Every error. One body that satisfies both error shapes of the spec.',
  });

/** The success envelope around an endpoint's data; the operation's own schema is `data`. */
export const successEnvelope = <Data extends z.ZodType>(data: Data) =>
  z.strictObject({ success: z.literal(true), data });

// Compile-time guards: each schema's output type must equal the type its handler returns.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type RegisterResult = { userId: string; status: 'active'; registeredAt: string };
type FlattenedEnvelope = Omit<ReceiptEnvelope, 'expiresAt' | 'escrowKeyId'>;
export const responseTypesMatch: [
  Same<z.output<typeof keyPairResponse>, GeneratedKeyPair>,
  Same<z.output<typeof importedKeyResponse>, ImportedKey>,
  Same<z.output<typeof userResponse>, RegisterResult>,
  Same<z.output<typeof accessTokenResponse>, AccessToken>,
  Same<z.output<typeof encryptedEnvelopeResponse>, ReceiptEnvelope>,
  Same<z.output<typeof flattenedEnvelopeResponse>, FlattenedEnvelope>,
  Same<z.output<typeof transactionMappingResponse>, TransactionMapping>,
  Same<z.output<typeof paymentResultResponse>, PaymentResult>,
  Same<z.output<typeof healthReportResponse>, HealthReport>,
] = [true, true, true, true, true, true, true, true, true];
