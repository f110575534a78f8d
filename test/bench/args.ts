/** Option parsers the bench scripts share (commander). */
import { InvalidArgumentError } from 'commander';

/** A whole number ≥ 1, or commander's usage error naming the option. */
export const positive = (v: string): number => {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1) throw new InvalidArgumentError('a whole number ≥ 1');
  return n;
};
