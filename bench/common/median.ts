/**
 * The median of a list of numbers (the mean of the two middle ones for an even count; NaN for
 * none), for the benches' rounds and samples. Pure; does not reorder `xs`.
 * @module
 */

/** See the module documentation. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}
