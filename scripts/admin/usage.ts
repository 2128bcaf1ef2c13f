/*
 * The admin CLI's texts and usage errors, in a module of their own: scripts/admin.ts prints them and
 * names the errors without loading the commands, which it loads only when one of them is asked for
 * (each brings AWS SDK clients: a first import costs about half a second).
 */

export const cardholderUsage = `Usage: npm run admin -- card-key <rotate|retag> [--aws] [--json]
       npm run admin -- users unbind --user USER_ID --reason TEXT [--aws] [--json]
       npm run admin -- keys audit [--aws] [--json]
       npm run admin -- evidence backfill [--remove-orphans] [--aws] [--json]
       npm run admin -- receipts migrate [--aws] [--json]

card-key rotate  starts a new card-tag key version and re-tags every stored card tag (card guards,
                 users, escrowed receipts). Functions read the key again within 5 minutes (5 s on
                 the local stack); run \`card-key retag\` after that to move what they wrote meanwhile.
card-key retag   re-tags what is not under the current version yet; safe to run at any time.
users unbind     undoes a registration made by the wrong client (after a register conflict): the
                 user and its card guard go, so the card's issuer can register it. Audited with
                 the reason under the user's client.
evidence backfill  indexes escrowed receipts stored before the evidence index (removing the card tag,
                 time and facts they carried) and re-keys entries made under an older card-tag key
                 version or claim window, and names entries on receipts stored before receipts named
                 them. --remove-orphans also deletes entries whose receipt is gone (after a minute's
                 wait; after \`receipts migrate\`). Safe to repeat; \`npm start\` runs it on every start.
receipts migrate copies the receipts of the table keyed by merchant alone (before issue 40) into the
                 sharded receipts table, each under its sharded key; what is there already stays.
                 Safe to repeat; \`npm start\` runs it on every start. --aws reads the old table's
                 name from TABLE_RECEIPTS_LEGACY (docs/DEPLOY.md).
keys audit       lists the stored public keys (key pairs and users) that today's import rules
                 refuse (RSA exponent other than 65537, even modulus, size; EC off P-256; no
                 envelope can be sealed to it) or that are not stored in canonical form. Read-only.

--aws needs AWS_REGION, TABLE_USERS, TABLE_KEY_PAIRS, TABLE_RECEIPTS, TABLE_AUDIT, TABLE_EVIDENCE and,
for card-key and evidence, CARD_TAG_SECRET_NAME; card-key and evidence read the claim window from
CLAIM_WINDOW_MINUTES (default 15, as deployed) (see docs/DEPLOY.md).`;

export class CardholderUsageError extends Error {}

export const merchantUsage = `Usage: npm run admin -- merchants require-signatures --client CLIENT_ID [--off] [--aws] [--json]
       npm run admin -- merchants reset-keys --client CLIENT_ID [--aws] [--json]

merchants require-signatures  makes every payments/{gateway}/create, receipts/encrypt and refund request
                              of the merchant client CLIENT_ID (its API keys' clientId, \`api-keys list\`)
                              carry a Receipt-Signature; --off lifts it. The client needs an active signing
                              key first. The same as the client's own POST /api/v1/merchants/signing-policy;
                              audited under the client.
merchants reset-keys          recovery for a merchant client that lost every signing key: revokes all its
                              keys and lifts require-signatures, so its API key alone can register a new
                              key. Only here (the API needs a proof by an active key for either change);
                              audited, and announced to the client's webhooks (merchant.keys.changed).

--aws needs AWS_REGION, TABLE_MERCHANT_KEYS, TABLE_AUDIT, TABLE_WEBHOOKS and TABLE_WEBHOOK_DELIVERIES
(see docs/DEPLOY.md).`;

export class MerchantUsageError extends Error {}

export const keyLogUsage = `Usage: npm run admin -- key-log watch --merchant CLIENT_ID [--url URL] [--state FILE] [--json]

key-log watch  every key registration and revocation under the merchant client since the last watch,
               checked against the public key log (the tree head signed by the log key pinned on the
               first watch, consistent with the head kept last, every leaf hashing to it). A key you did
               not register is one of them. --url the service (RECEIPT_SERVICE_URL, default the local
               stack); --state where the pinned key and last head are kept (.key-log-watch-<id>.json).`;

export class KeyLogUsageError extends Error {}
