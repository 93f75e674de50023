/**
 * Counts in words: `1 cell`, `2 cells`. Pure; any thread.
 * @module
 */

/** `n` and `noun`, the noun plural unless n is 1 (`plural` for irregular ones). */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
