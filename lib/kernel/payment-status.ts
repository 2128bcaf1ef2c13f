/**
 * A receipt's `paymentStatus` (DECISIONS, Round 3): the state of the money it records, stored in clear
 * beside the envelope. A sale is `pending` until its payment settles (`succeeded`, `failed`,
 * `canceled`), then `partially_refunded` or `refunded` as its succeeded refunds add up; a refund
 * receipt carries its refund's own `pending` / `succeeded` / `failed` / `canceled`. Receipts made by
 * receipts/encrypt have none.
 */
export const paymentStatuses = [
  'pending',
  'succeeded',
  'failed',
  'canceled',
  'partially_refunded',
  'refunded',
] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

/**
 * How far along a status is. A status is only ever replaced by one ranked higher, so an event that
 * arrives late (a `payment_intent.succeeded` after a refund) cannot take a receipt back. `failed` ranks
 * below `succeeded`: a gateway_a intent may still be paid after a failed attempt.
 */
export const statusRank: Record<PaymentStatus, number> = {
  pending: 0,
  failed: 1,
  succeeded: 2,
  canceled: 2,
  partially_refunded: 3,
  refunded: 4,
};
