/** Helpers of the brpc UBRing tests. */
import { readdirSync } from "node:fs";

/** `n` bytes of a pattern seeded by `seed`. */
export function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed) & 0xff;
  return b;
}

/** A logger that keeps its lines. */
export function logger() {
  const lines: string[] = [];
  return { lines, warn: (m: string) => void lines.push(m) };
}

/** Waits until `cond` holds (throws after `ms`). */
export async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The UBRing objects in /dev/shm. */
export const ubringObjects = () => readdirSync("/dev/shm").filter((n) => n.startsWith("UBRING_"));
