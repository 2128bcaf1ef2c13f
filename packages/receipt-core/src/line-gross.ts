/**
 * A line's quantity × unitPrice as the receipt states them, rounded half away from zero to the minor
 * unit. Binary floating point cannot hold most decimal quantities: 2.55 × 5390 is 13744.5 as written,
 * but 13744.499999999998 as doubles multiply, which `Math.round` takes down to 13744. The product is
 * therefore made of the decimals each number prints as (the shortest text that reads back to it).
 */
export function lineGross(quantity: number, unitPrice: number): number {
  const product = quantity * unitPrice;
  // Whole quantities of whole prices multiply exactly while the product stays a safe integer.
  if (Number.isSafeInteger(product) && Number.isInteger(quantity) && Number.isInteger(unitPrice))
    return product;
  const q = decimalOf(quantity);
  const p = decimalOf(unitPrice);
  if (!q || !p) return Math.sign(product) * Math.round(Math.abs(product));
  const digits = q.digits * p.digits;
  const divisor = 10n ** BigInt(q.scale + p.scale);
  const magnitude = digits < 0n ? -digits : digits;
  const rounded = (magnitude * 2n + divisor) / (2n * divisor);
  return Number(digits < 0n ? -rounded : rounded);
}

/** A finite number as an integer and a power of ten to divide it by: 2.55 is 255 and 2. */
function decimalOf(value: number): { digits: bigint; scale: number } | undefined {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(value));
  if (!match) return undefined;
  const [, sign, whole, fraction = '', exponent = '0'] = match;
  let digits = BigInt(`${sign}${whole}${fraction}`);
  let scale = fraction.length - Number(exponent);
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}
