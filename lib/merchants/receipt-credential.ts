import {
  merchantJwksPath,
  ReceiptCredentialError,
  receiptCredentialClaims,
  verifyReceiptPresentation,
  type VerifiedPresentation,
} from '@receipt-service/receipt-core/credential';
import type { DigitalReceipt12 } from '@receipt-service/receipt-core';
import type { Caller } from '../api-keys/authenticator.js';
import type { CoreDeps } from '../app/deps.js';
import { ReceiptCredentialRefusedError } from './vocabulary.js';

/**
 * The receiptCredential of a create or encrypt request (docs/ENVELOPE.md, "The receipt credential"):
 * checked before anything is charged or stored, then sealed in the receipt beside merchantSignature.
 * It stands when the SD-JWT VC verifies (receipt-core's verifyReceiptPresentation: @sd-jwt, jose)
 * against the JWKS of the caller's active ES256 signing keys, its `iss` is the caller's JWKS URL, and
 * its receipt id, issue date, currency and payable amount are those of the receipt sealed. Every
 * claim the credential carries is disclosed here (the till sends them all); only those four are
 * compared, as the rest is the merchant's own account of its lines, which it signs.
 */
export type CredentialDeps = Pick<CoreDeps, 'repos' | 'audit'>;

/** The claims compared with the receipt: [dotted path, value in the credential, value of the receipt]. */
function mismatches(claims: VerifiedPresentation['claims'], receipt: DigitalReceipt12): string[] {
  const expected = receiptCredentialClaims(receipt);
  const pairs: [string, unknown, unknown][] = [
    ['PurchaseReceipt.iD', claims.PurchaseReceipt?.iD, expected.PurchaseReceipt.iD],
    ['PurchaseReceipt.issueDate', claims.PurchaseReceipt?.issueDate, expected.PurchaseReceipt.issueDate],
    [
      'PurchaseReceipt.documentCurrencyCode',
      claims.PurchaseReceipt?.documentCurrencyCode,
      expected.PurchaseReceipt.documentCurrencyCode,
    ],
    [
      'MonetaryTotal.payableAmount',
      claims.MonetaryTotal?.payableAmount,
      expected.MonetaryTotal.payableAmount,
    ],
  ];
  return pairs
    .filter(([, found, wanted]) => found !== wanted)
    .map(
      ([path, found, wanted]) =>
        `${path} is ${JSON.stringify(found ?? null)}, the receipt's ${JSON.stringify(wanted)}`,
    );
}

async function refuse(
  deps: CredentialDeps,
  input: { caller: Caller; requestId: string },
  reason: string,
  message: string,
  kid?: string,
): Promise<never> {
  await deps.audit.record({
    action: 'receipt.credential',
    outcome: 'failure',
    requestId: input.requestId,
    clientId: input.caller.clientId,
    reason: `${reason}${kid ? ` (kid ${kid})` : ''}`,
  });
  throw new ReceiptCredentialRefusedError(message, reason, kid ? { kid } : {});
}

/**
 * The receipt to seal: as it is without a credential, else with the checked credential inside it as
 * `receiptCredential` (a refusal throws before anything is stored).
 */
export async function sealedWithCredential<R extends DigitalReceipt12>(
  deps: CredentialDeps,
  credential: string | undefined,
  input: { caller: Caller; receipt: R; requestId: string },
): Promise<R & { receiptCredential?: string }> {
  if (credential === undefined) return input.receipt;
  const { caller } = input;
  const active = (await deps.repos.merchantKeys.listForClient(caller.clientId)).filter(
    (key) => !key.revokedAt && key.alg === 'ES256',
  );
  const jwks = { keys: active.map((key) => ({ ...key.publicKey, kid: key.kid, alg: 'ES256', use: 'sig' })) };
  let verified: VerifiedPresentation;
  try {
    verified = await verifyReceiptPresentation(credential, jwks);
  } catch (error) {
    if (!(error instanceof ReceiptCredentialError)) throw error;
    return refuse(
      deps,
      input,
      'credential_signature',
      `${error.message}. It must be signed ES256 by an active signing key of this merchant client`,
    );
  }
  const { claims, kid } = verified;
  if (!claims.iss.endsWith(merchantJwksPath(caller.clientId))) {
    return refuse(
      deps,
      input,
      'credential_issuer',
      `The credential's iss must be this merchant client's JWKS URL (…${merchantJwksPath(caller.clientId)})`,
      kid,
    );
  }
  const problems = mismatches(claims, input.receipt);
  if (problems.length > 0) {
    return refuse(
      deps,
      input,
      'credential_claims',
      `The credential is not of this receipt: ${problems.join('; ')}. Issue it over the receipt the service ` +
        'seals (the SDK: toDigitalReceipt with transactionDate, then issueReceiptCredential)',
      kid,
    );
  }
  return { ...input.receipt, receiptCredential: credential };
}
