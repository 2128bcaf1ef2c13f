import * as z from 'zod';
import { dateTime } from '../kernel/fields.js';

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
