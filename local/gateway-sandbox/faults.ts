import * as z from 'zod';

export const sandboxOperations = [
  'stripe.paymentIntents.create',
  'stripe.paymentIntents.retrieve',
  'stripe.paymentIntents.confirm',
  'stripe.paymentIntents.cancel',
  'stripe.refunds.create',
  'stripe.refunds.list',
  'square.orders.create',
  'square.orders.get',
  'square.payments.create',
  'square.payments.get',
  'square.locations.get',
  'square.refunds.create',
  'square.refunds.get',
] as const;
export type SandboxOperation = (typeof sandboxOperations)[number];

const times = z.union([z.number().int().min(1), z.literal('always')]).default(1);

/** The control endpoint accepts exactly what the in-process `faults.add` does. */
export const faultSpecSchema = z.discriminatedUnion('kind', [
  /** Answer with this status before doing anything (an outage in front of the API). */
  z.object({
    kind: z.literal('status'),
    operation: z.enum(sandboxOperations),
    status: z.number().int().min(400).max(599).default(500),
    times,
  }),
  /**
   * Hold the request and never answer. `after-commit` does the work first: the payment exists but the
   * client never hears of it, which is the case idempotency keys exist for.
   */
  z.object({
    kind: z.literal('hang'),
    operation: z.enum(sandboxOperations),
    when: z.enum(['before-commit', 'after-commit']),
    ms: z.number().int().min(1).max(600_000).default(30_000),
    times,
  }),
  /** Decline the charge (or the refund) as the provider would for a refused card. */
  z.object({
    kind: z.literal('decline'),
    operation: z.enum([
      'stripe.paymentIntents.create',
      'stripe.paymentIntents.confirm',
      'square.payments.create',
      'stripe.refunds.create',
      'square.refunds.create',
    ]),
    times,
  }),
]);
export type FaultSpec = z.input<typeof faultSpecSchema>;
export type ActiveFault = z.output<typeof faultSpecSchema>;

export class FaultRegistry {
  private active: ActiveFault[] = [];

  add(spec: FaultSpec): void {
    this.active.push(faultSpecSchema.parse(spec));
  }

  clear(): void {
    this.active = [];
  }

  list(): ActiveFault[] {
    return this.active.map((fault) => ({ ...fault }));
  }

  /** The first fault armed for this operation, used up by one request. */
  take(operation: SandboxOperation): ActiveFault | undefined {
    const index = this.active.findIndex((fault) => fault.operation === operation);
    const fault = this.active[index];
    if (!fault) return undefined;
    if (fault.times !== 'always') {
      if (fault.times <= 1) this.active.splice(index, 1);
      else this.active[index] = { ...fault, times: fault.times - 1 };
    }
    return fault;
  }
}

/** One request that reached an API operation, in arrival order: what a test counts retries by. */
export interface SandboxAttempt {
  operation: SandboxOperation;
  /** The Idempotency-Key header (Stripe) or the body's idempotency_key (Square); null when absent. */
  idempotencyKey: string | null;
  /** The fault armed for this request that it met, if any. */
  fault: ActiveFault['kind'] | null;
}

export interface SandboxStats {
  /** Every request that reached an API operation, faulted ones included. */
  requests: Record<SandboxOperation, number>;
  /** Payments that exist afterwards; replays and declines do not add to it. */
  paymentsCreated: { gateway_a: number; gateway_b: number };
  ordersCreated: number;
  /** Refunds that exist afterwards, through the API or the dashboard call; replays and refusals do not count. */
  refundsCreated: { gateway_a: number; gateway_b: number };
}

export function emptyStats(): SandboxStats {
  return {
    requests: Object.fromEntries(sandboxOperations.map((op) => [op, 0])) as Record<SandboxOperation, number>,
    paymentsCreated: { gateway_a: 0, gateway_b: 0 },
    ordersCreated: 0,
    refundsCreated: { gateway_a: 0, gateway_b: 0 },
  };
}

/** In place, so a test holding `sandbox.stats` keeps reading live numbers. */
export function resetStats(stats: SandboxStats): void {
  Object.assign(stats, emptyStats());
}
