/** The payment gateways by their neutral names: gateway_a is Stripe, gateway_b is Square. */
export type GatewayKind = 'gateway_a' | 'gateway_b';

export const gatewayKinds: readonly GatewayKind[] = ['gateway_a', 'gateway_b'];
