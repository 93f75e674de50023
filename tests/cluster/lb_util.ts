/**
 * Helpers of the balancer tests: a seeded PRNG (so statistical checks are repeatable), server
 * lists from brpc's server lines, and pick counting.
 * @module
 */
import type { LoadBalancer, SelectRequest } from "../../rpc/cluster/balancer.ts";
import { parseServerLine, type ServerNode } from "../../rpc/cluster/naming.ts";

/** mulberry32: a small seeded PRNG giving numbers in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Servers from brpc's lines (`"127.0.0.1:8001 3"`). */
export function servers(...lines: string[]): ServerNode[] {
  return lines.map((l) => parseServerLine(l)!);
}

/** No exclusions. */
export const NONE: SelectRequest = { excluded: new Set() };

/** Picks `n` times; the count of each address (null counted as "null"). */
export function countPicks(
  lb: LoadBalancer,
  n: number,
  request: SelectRequest = NONE,
): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const a = lb.select(request) ?? "null";
    counts[a] = (counts[a] ?? 0) + 1;
  }
  return counts;
}
