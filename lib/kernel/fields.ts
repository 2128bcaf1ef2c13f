import * as z from 'zod';
import { lazySchema } from './lazy-schema.js';

/*
 * The field types every request and response is built from: ids, times, money, card hashes, gateways.
 * Money is always an integer in the currency's smallest unit.
 */
export const uuid = lazySchema(() => z.uuid({ message: 'must be a UUID string' }));
export const dateTime = lazySchema(() =>
  z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time' }),
);
/** A base64 string field, documented as such. */
export const base64Text = (description: string) =>
  z.string().meta({ description, contentEncoding: 'base64' });
export const money = lazySchema(() =>
  z.number().int('must be an integer amount in the smallest currency unit'),
);
/**
 * Free text the service sends on (a refund's reason goes into a gateway's request). A lone UTF-16
 * surrogate (`"\ud800"` in JSON) has no UTF-8 form: the Stripe SDK throws on it (URIError) when it
 * form-encodes the request, which answered 500 before this check (the fuzzer found it).
 */
export const wellFormedText = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .refine(isWellFormed, 'must be well-formed Unicode text (a lone surrogate is not)');
/** String.prototype.isWellFormed: in Node since 20, in TypeScript's lib from ES2024 (tsconfig has ES2023). */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}
/** ISO 4217 codes as the runtime's ICU knows them: a made-up code would otherwise fail at the gateway. */
const isoCurrencies = new Set(Intl.supportedValuesOf('currency'));
export const currency = lazySchema(() =>
  z
    .string()
    .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code such as USD')
    .refine((code) => isoCurrencies.has(code), 'is not an ISO 4217 currency code')
    .meta({ description: 'ISO 4217 currency code, upper case.', examples: ['USD'] }),
);
export const hashedPan = lazySchema(() =>
  z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hash: 64 lowercase hexadecimal characters')
    .meta({
      description:
        'SHA-256 of the card number, computed by the client: 64 lower-case hex characters. ' +
        'The service never sees the PAN.',
      examples: ['a3f1c9e2b4d6f8a0c2e4f6a8b0d2f4a6c8e0a2c4e6f8a0b2d4f6a8c0e2a4c6e8'],
    }),
);

// Made on first use: building ICU's region names takes ~11 ms, a sixth of a bare handler's import.
let regionNames: Intl.DisplayNames | undefined;
/** ICU's verdict per code, asked once: at most 26 × 26 well-formed codes, so the map stays small. */
const regionVerdicts = new Map<string, boolean>();
/** ISO 3166-1 alpha-2, as the runtime's ICU knows the regions: `US`, not `USA` or `United States`. */
export const countryCode = lazySchema(() =>
  z
    .string()
    .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code such as US')
    .refine((code) => {
      // The pattern above reports a badly formed code; ICU throws on one.
      if (!/^[A-Z]{2}$/.test(code)) return true;
      let known = regionVerdicts.get(code);
      if (known === undefined) {
        regionNames ??= new Intl.DisplayNames(['en'], { type: 'region' });
        const name = regionNames.of(code);
        known = name !== undefined && name !== code && name !== 'Unknown Region';
        regionVerdicts.set(code, known);
      }
      return known;
    }, 'is not an ISO 3166-1 country code')
    .meta({ description: 'ISO 3166-1 alpha-2 country code, upper case.', examples: ['US'] }),
);

/** A logo is shown by issuers' apps: only https, never javascript:, data: or plain http. */
export const httpsUrl = lazySchema(() =>
  z
    .url({ protocol: /^https$/, message: 'must be an https URL' })
    .max(2048)
    .meta({ description: 'An https URL.' }),
);

const gatewayAliases = { stripe: 'gateway_a', square: 'gateway_b' } as const;

/** `gateway_a` / `gateway_b`, or their aliases `stripe` / `square`; always stored as the neutral name. */
export const paymentGatewayKind = lazySchema(() =>
  z
    .enum(['gateway_a', 'gateway_b', 'stripe', 'square'])
    .transform(
      (value) =>
        (value in gatewayAliases ? gatewayAliases[value as keyof typeof gatewayAliases] : value) as
          'gateway_a' | 'gateway_b',
    )
    .meta({ description: 'gateway_a or gateway_b; the aliases stripe and square are accepted for them.' }),
);

/** transactions also accepts `other`. */
export const transactionGatewaySchema = lazySchema(() =>
  z
    .enum(['gateway_a', 'gateway_b', 'other', 'stripe', 'square'])
    .transform(
      (value) =>
        (value in gatewayAliases ? gatewayAliases[value as keyof typeof gatewayAliases] : value) as
          'gateway_a' | 'gateway_b' | 'other',
    )
    .meta({
      description:
        'gateway_a, gateway_b or other; the aliases stripe and square are stored as gateway_a and gateway_b.',
    }),
);

/**
 * The `cursor` query parameter of a paged list. Any string: lib/crypto/cursor.ts checks it, so every
 * bad cursor (too long included) is one 400 INVALID_CURSOR rather than sometimes INVALID_REQUEST.
 */
export const pagingCursor = (resource: string) =>
  z
    .string()
    .meta({
      description:
        "The previous page's `nextCursor`, passed back unchanged. It is opaque: sealed with AES-256-GCM under a " +
        `key only the service holds, for this ${resource} and the client that received it, so it shows nothing ` +
        'and cannot be edited. A cursor that is altered, empty, longer than 2048 characters, or made for another ' +
        `${resource} or client is refused with 400 INVALID_CURSOR (one message for all). Cursors do not expire, ` +
        'but stop opening if the service replaces its cursor key: start again without a cursor.',
    })
    .optional();
