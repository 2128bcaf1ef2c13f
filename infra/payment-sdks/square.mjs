// Entry for the Square SDK shipped beside a payment function's bundle (see payment-sdks.ts). The
// package is CommonJS, so its named exports are spelt out: `export *` cannot see them. Every name the
// service reads from the SDK's namespace is here (lib/gateways/square-client.ts, registry.ts); the
// tests load this same bundle, so a name missing here fails them as it would fail the function.
import square from 'square';

export const { SquareClient, SquareEnvironment, SquareError, SquareTimeoutError, WebhooksHelper } = square;
export default square;
