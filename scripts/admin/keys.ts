import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { sealingProblem } from '../../lib/crypto/envelope.js';
import { InvalidPublicKeyError } from '../../lib/crypto/errors.js';
import { parsePublicKey, publicKeyDer } from '../../lib/crypto/keys.js';
import { scanTable } from '../../lib/db/scan.js';

/**
 * `npm run admin -- keys audit`: the public keys already stored that today's import rules refuse
 * (DECISIONS, "Keys that cannot hurt others"): RSA outside 2048..4096 bits, an even modulus or an
 * exponent other than 65537; EC off P-256; a key no envelope can be sealed to; and keys stored in a
 * form other than the canonical one (a compressed P-256 point). Read-only: what to do with a key is
 * its issuer's business (rotate the user's key); receipts for a user whose key fails are escrowed
 * meanwhile, never refused.
 */
export interface KeyAuditDeps {
  doc: DynamoDBDocumentClient;
  tables: { users: string; keyPairs: string };
}

export interface KeyFinding {
  /** Where the key is stored: the key pair, or the user (and its card guard, which copies it). */
  source: 'key-pair' | 'user';
  keyId: string;
  clientId: string;
  userId?: string;
  problem: string;
}

export interface KeyAudit {
  keysChecked: number;
  findings: KeyFinding[];
}

/** Why a stored key breaks the rules, or undefined when it keeps them. */
export function storedKeyProblem(stored: string): string | undefined {
  let key;
  try {
    key = parsePublicKey(stored);
  } catch (error) {
    if (error instanceof InvalidPublicKeyError) return error.problem;
    throw error;
  }
  const problem = sealingProblem(key);
  if (problem !== undefined) return problem;
  if (publicKeyDer(key).toString('base64') !== stored)
    return 'not stored in canonical form (the uncompressed SubjectPublicKeyInfo); it still works, as that form';
  return undefined;
}

export async function auditStoredKeys(deps: KeyAuditDeps): Promise<KeyAudit> {
  const findings: KeyFinding[] = [];
  let keysChecked = 0;
  const check = (stored: unknown, finding: Omit<KeyFinding, 'problem'>) => {
    if (typeof stored !== 'string') return;
    keysChecked += 1;
    const problem = storedKeyProblem(stored);
    if (problem !== undefined) findings.push({ ...finding, problem });
  };
  for await (const item of scanTable(deps.doc, deps.tables.keyPairs, {
    filter: 'attribute_exists(publicKey)',
  })) {
    check(item.publicKey, {
      source: 'key-pair',
      keyId: String(item.keyId),
      clientId: String(item.clientId),
      ...(typeof item.userId === 'string' ? { userId: item.userId } : {}),
    });
  }
  // The users table's copy is what encryption reads; a guard (CARD#…) repeats its user's, so users only.
  for await (const item of scanTable(deps.doc, deps.tables.users, {
    filter: 'begins_with(pk, :user)',
    values: { ':user': 'USER#' },
  })) {
    check(item.publicKey, {
      source: 'user',
      keyId: String(item.keyId),
      clientId: String(item.clientId),
      userId: String(item.userId),
    });
  }
  return { keysChecked, findings };
}
