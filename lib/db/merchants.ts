import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { putIfAbsent } from './client.js';

export interface MerchantRecord {
  merchantId: string;
  /** The merchant client that named this merchantId first: the only one that may name it. */
  merchantClientId: string;
  createdAt: string;
}

/** Enough for a busy function's merchants; cleared whole when full, since every entry is re-readable. */
const CACHE_LIMIT = 10_000;

/**
 * merchantId ownership. A claim never changes once written, so an owner this process has seen is
 * kept in memory: a merchant's later receipts cost no read here.
 */
export class MerchantRepository {
  private readonly owners = new Map<string, string>();

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /**
   * The client owning the merchantId after this call: the caller's when nobody had named it (the
   * conditional put makes the first of two racing clients the owner), otherwise the first owner.
   */
  async claim(merchantId: string, merchantClientId: string, now: Date): Promise<string> {
    const known = this.owners.get(merchantId);
    if (known) return known;
    const record: MerchantRecord = { merchantId, merchantClientId, createdAt: now.toISOString() };
    const outcome = await putIfAbsent(this.doc, this.tableName, record, 'merchantId', () =>
      this.read(merchantId),
    );
    return this.remember(merchantId, outcome.stored ? merchantClientId : outcome.existing.merchantClientId);
  }

  /** The client owning the merchantId, or null when no client has named it. */
  async ownerOf(merchantId: string): Promise<string | null> {
    const known = this.owners.get(merchantId);
    if (known) return known;
    const record = await this.read(merchantId);
    return record ? this.remember(merchantId, record.merchantClientId) : null;
  }

  private async read(merchantId: string): Promise<MerchantRecord | null> {
    // Ids can come straight from a gateway payment's metadata; DynamoDB refuses an empty key.
    if (merchantId === '') return null;
    const result = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { merchantId }, ConsistentRead: true }),
    );
    return (result.Item as MerchantRecord | undefined) ?? null;
  }

  private remember(merchantId: string, owner: string): string {
    if (this.owners.size >= CACHE_LIMIT) this.owners.clear();
    this.owners.set(merchantId, owner);
    return owner;
  }
}
