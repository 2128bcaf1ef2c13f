// Entry for the Square SDK shipped beside a payment function's bundle (see payment-sdks.ts). The
// package is CommonJS, so its named exports are spelt out: `export *` cannot see them.
import square from 'square';

export const { SquareClient, SquareEnvironment, SquareError, SquareTimeoutError } = square;
export default square;
