/**
 * What copying 64 KiB costs this runtime here (run it in the Soft-RoCE VM next to the host: under
 * qemu TCG `set` and `slice` between buffers cost ~100–350 µs, `copyWithin` ~1 µs; on the host a
 * few µs each). The LAZY path copies a 64 KiB result twice in JS (bench/results/vm-floor.md).
 *
 *   node_modules/.bin/deno run -A bench/vm/copy_cost.ts      node_modules/.bin/bun bench/vm/copy_cost.ts
 * @module
 */
const src = new Uint8Array(65536).fill(7), dst = new Uint8Array(65536);
const w = new Int32Array(src.buffer), wd = new Int32Array(dst.buffer);

/** µs per call of `f`, after a warm-up. */
function time(name: string, f: () => unknown, n = 2000): void {
  for (let i = 0; i < 200; i++) f();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) f();
  console.log(`${name}: ${(((performance.now() - t0) * 1000) / n).toFixed(1)} µs`);
}

time("slice 64 KiB", () => src.slice());
time("set 64 KiB", () => dst.set(src));
time("copyWithin 64 KiB (same buffer)", () => dst.copyWithin(0, 0, 65536));
time("new Uint8Array(65536)", () => new Uint8Array(65536));
time("32-bit word loop 64 KiB", () => {
  for (let i = 0; i < 16384; i++) wd[i] = w[i];
}, 300);
