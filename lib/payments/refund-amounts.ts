import {
  itemisedRefund as sdkItemisedRefund,
  RefundItemsError,
  type Refunded,
  type RefundAmounts,
  type SaleAmounts,
} from '@receipt-service/receipt-core';
import { InvalidRequestError } from '../kernel/errors.js';

/**
 * How much a refund gives back, from the sale's lines (docs/API.md, "Refunds: the amount rule").
 *
 * - Each sale line carries a share of the sale's tax: the sum of the tax amounts it lists, and of
 *   the tax no line lists, a part in proportion to its totalPrice among the lines that list none
 *   (all lines, when every line lists some, or when the listed amounts exceed the sale's tax: then
 *   the whole tax is shared by totalPrice). Shares are rounded by largest remainder, so they add up
 *   to the sale's totalTax exactly.
 * - Refunding q of a line's quantity Q gives back totalPrice × q ÷ Q of its price and the same part
 *   of its tax share, each rounded half up on the running total for that line: the line's refunds
 *   together never exceed it, and refunding all of it, in any number of steps, gives back exactly
 *   its totalPrice and tax share.
 * - A refund of an amount (no lines named) carries tax in the sale's proportion (totalTax ÷ total),
 *   rounded half up and never more than the tax not yet refunded; the refund that empties the
 *   payment carries all the tax that is left.
 */

/*
 * The rules are receipt-core's (packages/receipt-core/src/refund-receipt.ts): a till that signs a refund receipt
 * computes it with the very functions the service does.
 */
export {
  amountRefund,
  lineTaxShares,
  shareByWeight,
  type Refunded,
  type RefundAmounts,
  type SaleAmounts,
} from '@receipt-service/receipt-core';

/**
 * The lines named by `items`, priced by the rule above; 400 naming each item that is not a line of
 * the sale, is named twice, or asks for more than is left of its line.
 */
export function itemisedRefund(
  sale: SaleAmounts,
  refunded: Refunded,
  items: readonly { lineItemId: string; quantity: number }[],
): RefundAmounts {
  try {
    return sdkItemisedRefund(sale, refunded, items);
  } catch (error) {
    if (error instanceof RefundItemsError)
      throw new InvalidRequestError('Invalid refund items', error.problems);
    throw error;
  }
}
