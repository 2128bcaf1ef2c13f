// Entry for the Stripe SDK shipped beside a payment function's bundle (see payment-sdks.ts).
export { default } from 'stripe';
export * from 'stripe';
