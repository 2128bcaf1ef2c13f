import { rateGroupOf, type RouteDeclaration } from '../kernel/route.js';
import { rateGroups, type RateGroup, type TierTable } from '../kernel/tiers.js';

const groupTitles: Record<RateGroup, string> = {
  general: 'other keyed endpoints',
  keyGeneration: 'key generation',
  payments: 'payments',
};

/** `POST /api/v1/...` of each keyed route in the group. */
const endpointsOf = (routes: readonly RouteDeclaration[], group: RateGroup): string =>
  routes
    .filter((route) => route.apiKeyRequired && rateGroupOf(route) === group)
    .map((route) => `\`${route.method} ${route.path}\``)
    .join(', ');

/** The path of the receipt match operation (DECISIONS.md, Round 3, "The issuer's view"). */
export const MATCH_PATH = '/api/v1/users/{userId}/receipts/match';

/**
 * Match, whether or not this deployment has it yet: the paragraph is written from the route table, so
 * it says "coming" exactly while the operation is not among the routes.
 */
function describeMatch(routes: readonly RouteDeclaration[]): string[] {
  const available = routes.some((route) => route.path === MATCH_PATH);
  const summary = [
    `\`POST ${MATCH_PATH}\` (issuer owning the user) puts receipts beside the lines of a card statement without`,
    "decrypting anything: it takes up to 100 of the card's transactions as the issuer's ledger has them (`reference`,",
    "the ledger's own id, echoed back; `amount`, `currency`, `transactionDate`, `cardLast4`?) and answers, per",
    "`reference`, the ids of the user's receipts whose evidence matches, by the same keyed look-up as claims",
  ];
  if (!available)
    return [
      ...summary,
      '(escrowed receipts need a claim first), spending the same per-card allowance.',
      'It is being added in this round: until this document lists the operation, the service answers its path 404.',
    ];
  return [
    ...summary,
    '(same currency, the total or the total before tip equal to `amount`, the time within the claim window, the',
    'last four digits when both sides have them): one look-up per transaction, so a match costs the same whatever',
    "the card has near that time. Escrowed receipts are not listed (a claim makes them the user's first), nor are",
    "receipts wrapped for the user before the evidence index existed. Each transaction spends one of the card's",
    'daily allowance with the client, the one claims spend (429 `CLAIM_LIMIT_EXCEEDED` for both once it is spent);',
    "another issuer's user is the same 404 as an unknown one. The device then fetches and opens each receipt as in",
    'the device flow. See the operation below.',
  ];
}

/**
 * The document's description: the choices the spec leaves open ("not shown") and how this service
 * settled them (docs/API.md), written for the integrator who reads only this document.
 */
export function describeApi(tiers: TierTable, routes: readonly RouteDeclaration[]): string {
  const tierRows = Object.entries(tiers).map(
    ([name, tier]) =>
      `| ${name} | ${rateGroups.map((group) => tier.requestsPerMinute[group]).join(' | ')} | ${tier.ratePerSecond} | ${tier.burst} | ${tier.dailyQuota} |`,
  );
  const created = routes
    .filter((route) => route.response.status === 201)
    .map((route) => `\`${route.method} ${route.path}\``)
    .join(', ');
  const groupRows = rateGroups
    .filter((group) => group !== 'general')
    .map((group) => `- ${groupTitles[group]}: ${endpointsOf(routes, group)}`);
  return [
    'End-to-end encrypted digital receipts. Merchants encrypt receipts for cardholders identified only by the',
    'SHA-256 hash of their card number (`hashedPan`: 64 lower-case hex characters, computed by the issuer). The',
    "cardholder's issuer opens them either on the cardholder's device, with a key that never leaves it (the",
    'device flow), or through the service with the private key and a short-lived access token (the',
    "specification's flow). The service never sees a card number and never stores a private key or a",
    'plaintext receipt. Both flows run side by side, per user.',
    '',
    "## The specification's flow",
    '',
    '1. `POST /api/v1/onboarding/generate-keys` (issuer): keyId, publicKey, privateKey (returned once).',
    '2. `POST /api/v1/onboarding/register` (issuer): hashedPan + publicKey + keyId → userId.',
    '3. `POST /api/v1/payments/{gateway}/create` (merchant, `recipientHashedPan` = the registered hashedPan) →',
    '   paymentId and gateway. (`POST /api/v1/receipts/encrypt` stores a receipt without a payment.)',
    '4. `POST /api/v1/keys/grant-access` (issuer, after user consent) → tokenId.',
    '5. `POST /api/v1/payments/decrypt` (issuer, tokenId as `accessTokenId`, the private key) → the receipt.',
    '',
    '## The device flow',
    '',
    "1. On the device: a P-256 (or RSA) key pair whose private half cannot leave it (the SDK's",
    '   `generateDeviceKey`).',
    '2. `POST /api/v1/onboarding/keys` (issuer): the public key → 201 with its keyId; then',
    '   `POST /api/v1/onboarding/register` with hashedPan, keyId and publicKey → userId.',
    '3. A merchant pays (`payments/{gateway}/create`) or encrypts (`receipts/encrypt`) as above.',
    '4. The issuer hears of the receipt (a `receipt.available` webhook, or the inbox), fetches its envelope with',
    '   `GET /api/v1/receipts/{receiptId}` or `GET /api/v1/payments/{gateway}/{paymentId}/receipt`, and the device',
    "   opens it (the SDK's `openEnvelope`): no token, and no private key sent anywhere.",
    '',
    '## The inbox, escrow and claims',
    '',
    "`GET /api/v1/users/{userId}/receipts` lists a user's receipts newest first: identifiers only, with an",
    'opaque cursor. A receipt for a card that is not registered is escrowed (`isEscrowed: true`). Registering the',
    'card releases nothing: the service cannot tell whether the client registering a card issues it. The',
    "card's issuer releases escrowed receipts with `POST /api/v1/receipts/claim`, showing the card transactions",
    "they were paid with; released receipts are re-wrapped for the user's current key.",
    '',
    '## Matching receipts to card transactions',
    '',
    ...describeMatch(routes),
    '',
    '## Webhooks',
    '',
    '`POST /api/v1/webhooks` registers an https endpoint (201, with its signing secret, shown once) for the',
    'events its body lists: `receipt.available` to the issuer owning the user a receipt was stored or released',
    'for, `receipt.escrowed` to the merchant whose receipt was escrowed. Events carry identifiers only, are',
    'signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`), and are retried on',
    'a back-off schedule until a 2xx; `GET /api/v1/webhooks/{webhookId}/deliveries` lists the attempts.',
    '',
    '## Merchant-signed receipts',
    '',
    'A merchant may sign each receipt with a key of its own (Ed25519 or P-256, registered with',
    '`POST /api/v1/merchants/signing-keys`): the `Receipt-Signature` header of a payment create, an encrypt or a',
    'refund carries a detached JWS over the RFC 8785 JSON of the receipt the service will seal. It is checked',
    'before anything is charged or stored (400 `invalid_signature` otherwise) and sealed inside the receipt as',
    "`merchantSignature`, where the cardholder's device checks it with the key `GET /api/v1/merchant-keys/{kid}`",
    'gives. A merchant can require signatures on all its requests (`POST /api/v1/merchants/signing-policy`).',
    '',
    '## Bodies',
    '',
    '- Requests are JSON sent with `Content-Type: application/json`; another content type is 415, malformed',
    '  JSON 400, a body over 128 KiB 413. Unknown request fields are refused: 400 `INVALID_REQUEST` naming each',
    '  in `details.fields` (with the closest known name), so a misspelt field is never dropped silently.',
    `- Success: \`{"success": true, "data": …}\` with 200, or 201 where a resource is created (${created}).`,
    '  Each operation documents the one status it answers on success. Error: `{"success": false, "error":',
    '  {"code", "message", "details"?, "timestamp", "request_id"}}`, one body satisfying both error shapes of',
    '  the spec.',
    '- Response objects list every field the service sends today (`additionalProperties: false`, which the',
    '  contract tests enforce). Adding an optional field is a non-breaking change, so clients must ignore',
    '  fields they do not know.',
    '- Money is always an integer in the minor unit of the currency (cents for USD). Identifiers are UUIDs.',
    '- `publicKey` is base64 DER SubjectPublicKeyInfo and `privateKey` base64 DER PKCS#8; PEM is accepted too.',
    '',
    '## Authentication and roles',
    '',
    'Every operation but `GET /api/v1/health` and `GET /api/v1/openapi.json` needs `X-API-Key`. A key belongs',
    'to a client with roles: `merchant` (encrypt, payment creation, storing transactions) and `issuer`',
    '(onboarding, keys and tokens, both decrypts, the inbox, claims, users). Reading a transaction or a stored',
    'receipt, and webhooks, take either. A missing or invalid key',
    'is 401 `unauthorized`; a valid key without the role is 403 `forbidden`. Decryption also needs a live',
    'access token and the private key of the user the receipt is for.',
    '',
    '## Rate limits',
    '',
    'Every response carries `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (Unix epoch',
    'seconds at which the one-minute window ends) and `X-Request-Id`. Past the limit the answer is 429',
    '`rate_limit_exceeded` with `Retry-After`. Calls without a valid key count against a small per-source-IP',
    'budget (60 a minute by default) and their headers describe that budget.',
    '',
    'Limits vary by tier and endpoint: a key has one per-minute budget for each group of endpoints below,',
    "each counted apart, and the headers of a response describe the budget of that response's group. A burst",
    'of key generation or payment calls therefore never eats the budget receipts are encrypted with.',
    '',
    ...groupRows,
    `- ${groupTitles.general}: every other endpoint that takes an API key`,
    '',
    'Default tiers (a deployment may override the edge figures):',
    '',
    `| tier | ${rateGroups.map((group) => `per minute: ${groupTitles[group]} (service)`).join(' | ')} | per second (edge) | burst (edge) | per day (edge) |`,
    `|---|${rateGroups.map(() => '---|').join('')}---|---|---|`,
    ...tierRows,
    '',
    '## Errors, and 404 versus 403',
    '',
    '- Validation: 400 `INVALID_REQUEST`, with `details.fields` naming every bad field.',
    "- Another client's resources are reported exactly like missing ones, so their existence does not leak:",
    "  registering another client's keyId is 404 `KEY_NOT_FOUND`; reading or mapping another merchant's",
    "  transaction or receipt is 404 `not_found`; a grant for another client's user, an unknown user or a key",
    "  that is not the user's is the same 403 `GRANT_ERROR`.",
    '- Every decryption failure (token unknown, expired or of another client; wrong private key; tampered,',
    '  swapped or escrowed envelope) is the same 403 `DECRYPTION_ERROR` body apart from `request_id` and',
    '  `timestamp`: there is no error oracle. `payments/decrypt` answers 404 only for a payment the gateway',
    '  does not know or one that carries no receipt of this service.',
    '- 409: `ALREADY_REGISTERED` (hashedPan or keyId already registered), `CONFLICT` (a different receipt',
    '  under a receiptId or transactionId already used; a payment for a receipt that already has one, named in',
    '  `details`; an `Idempotency-Key` reused with another body).',
    '- A 6th active token for one user: 429 `GRANT_ERROR` with `Retry-After` (seconds until a token expires).',
    '- 402 `PAYMENT_DECLINED`, 502 `GATEWAY_ERROR` (gateway down or timing out), 500 `ENCRYPTION_ERROR`,',
    '  500 `KEY_GENERATION_FAILED`, 500 `internal_server_error` (details never leave the service), 503',
    '  `service_unavailable`. Each operation lists the codes each of its statuses can carry today; new codes',
    '  may be added, so handle an unknown code by its HTTP status.',
    '- Retry 429, 500, 502, 503, 504 and timeouts (at most 3 attempts, 2^attempt × 1000 ms apart); do not',
    '  retry 400, 401, 403, 404, 409.',
    '',
    '## Encryption',
    '',
    'AES-256-GCM (fresh key and 12-byte IV per receipt, 16-byte tag) with the key wrapped for the recipient:',
    'RSA-OAEP with SHA-256 and MGF1-SHA-256 (`RSA-OAEP-256`) for RSA keys, ECDH-ES+A256KW with an ephemeral',
    "key per receipt for P-256 keys (`keyBundle.algorithm`). The envelope's `protected` field is a JWE protected header",
    'binding version, receiptId, merchantId and transactionId as additional data, so an envelope is also a',
    'flattened JWE (convert the other fields from base64 to base64url).',
    '',
    '- Encrypt accepts two forms, told apart by shape: a body with a `receipt` member is the nested form,',
    '  any other the flattened form. The nested-form response carries `expiresAt` and `escrowKeyId`; the',
    '  flattened-form response omits both, as in the spec.',
    '- The recipient is the user registered with `recipientHashedPan`. With no such user (or, in the nested',
    '  form, only a `recipientIdentifier`, which never selects a user and is not stored in any form) the',
    '  receipt is encrypted with the escrow key and `isEscrowed` is true. Escrowed envelopes cannot be',
    '  decrypted through the API until a claim releases them (registering the card releases nothing).',
    '',
    '## Tokens',
    '',
    'A token lives 180 s by default (configurable within 120 to 180 s), is bound to one user, its key and',
    'purpose `decrypt`, may serve several decrypts until it expires, and at most 5 are active per user.',
    '',
    '## Amounts, idempotency and retention',
    '',
    "- `subtotal` must equal the sum of the items' `totalPrice` and `totalAmount` must equal `subtotal +",
    '  taxAmount`; for gateway_a `amount` is required and must equal `totalAmount`; for gateway_b the charge',
    '  is the items plus tax. `currency` defaults to USD. A mismatch is 400 naming the fields.',
    '- Payment creation is idempotent: the same receiptId (or `Idempotency-Key`) from the same client never',
    '  charges twice and returns the first result for 24 hours. One payment per receipt per merchant: another',
    '  create for a receiptId that has a payment is 409 naming it; a key reused with another body is 409.',
    '- Encrypting an identical request again returns the first envelope; storing the same transaction',
    '  mapping again returns the first mapping.',
    '- Envelopes are kept until `expiresAt`: 90 days for escrowed receipts that nobody claims, about 7 years',
    '  (2557 days) otherwise; both are configurable per deployment.',
    '- Gateway kinds are `gateway_a` and `gateway_b`; inputs also accept the aliases `stripe` and `square`,',
    '  and responses always use the neutral names. Payment results carry `clientSecret` for gateway_a and',
    '  `orderId` for gateway_b (null otherwise) and the `gateway` kind to send to payments/decrypt.',
    '',
    '## Responses made by API Gateway itself',
    '',
    'When deployed, API Gateway answers some requests before any function runs (missing or unknown key: 401;',
    'unknown path: 404; wrong method: 405; edge throttling or daily quota: 429; bodies over 10 MB: 413;',
    'integration failures: 503). They use the same error envelope, an ISO 8601 `timestamp`, and the same',
    '`X-Request-Id`, `X-RateLimit-*`, `Cache-Control` and security headers as every other response; a 429 for the',
    'daily quota shows the quota (`X-RateLimit-Remaining: 0`, `X-RateLimit-Reset` at 00:00 UTC). Three answers',
    'come before anything of the service runs and carry an empty `timestamp` and empty `X-RateLimit-*`: a body',
    'over 10 MB, the key check itself failing (503), and the account-wide throttle.',
    '',
    '## Versioning',
    '',
    'Version 1, carried in the path (`/api/v1/…`). Breaking changes get a new path version; a deprecated',
    "version stays supported for at least 12 months, with 6 months' notice. Adding optional fields,",
    'operations or error codes, and raising rate limits, are non-breaking.',
  ].join('\n');
}
