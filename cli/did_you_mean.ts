/**
 * "did you mean --echo?": the known name closest to a mistyped one, by edit distance (insert,
 * delete, replace, or swap two neighbours each count 1). Pure; any thread.
 * @module
 */

/** The optimal-string-alignment distance between `a` and `b` (adjacent swaps count 1). */
export function editDistance(a: string, b: string): number {
  // three rows: the one before the previous (for swaps), the previous, the current
  let before = new Array<number>(b.length + 1).fill(0);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, before[j - 2] + 1);
      }
      cur.push(d);
    }
    [before, prev] = [prev, cur];
  }
  return prev[b.length];
}

/**
 * The name of `known` closest to `typed`, if it is close enough to be a typo: at most one edit
 * in three characters (`ecko` → `echo`, `prot` → `port`), or `typed` a unique prefix of it
 * (`--lifecycle-rep` → `--lifecycle-repeat-reclaim`). Undefined when nothing is that close.
 */
export function didYouMean(typed: string, known: Iterable<string>): string | undefined {
  const names = [...known];
  const prefixed = names.filter((n) => typed.length >= 3 && n.startsWith(typed));
  if (prefixed.length === 1) return prefixed[0];
  let best: string | undefined, bestD = Infinity;
  for (const n of names) {
    const d = editDistance(typed, n);
    if (d < bestD) [best, bestD] = [n, d];
  }
  return bestD <= Math.max(1, Math.floor(typed.length / 3)) ? best : undefined;
}
