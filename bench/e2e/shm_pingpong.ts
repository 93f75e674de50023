/**
 * The limit for any shared-memory RPC: two processes ping-ponging one 32-bit word through a POSIX
 * shm object with Atomics (busy-wait, no syscalls). Run as
 *   deno run -A bench/e2e/shm_pingpong.ts [--iters N]      bun bench/e2e/shm_pingpong.ts [--iters N]
 * Prints one JSON line {name, runtime, iters, p50_us, p99_us, mean_us} (round trip).
 * @module
 */
import { spawn } from "node:child_process";
import { argv, execPath, pid } from "node:process";
import { ShmMapping } from "../../transport/shm/shm_object.ts";
import { RUNTIME } from "../../ffi/runtime.ts";

const args = RUNTIME === "deno" ? (globalThis as any).Deno.args as string[] : argv.slice(2);
const child = args.indexOf("--child");
if (child >= 0) {
  const m = await ShmMapping.open(args[child + 1], 4096);
  const w = new Int32Array(m.bytes.buffer, m.bytes.byteOffset, 16);
  Atomics.store(w, 1, 1); // ready
  for (;;) {
    let v: number;
    while (((v = Atomics.load(w, 0)) & 1) === 0) { /* spin */ }
    if (v < 0) break;
    Atomics.store(w, 0, v + 1); // pong: odd → even
  }
  m.close();
} else {
  const i = args.indexOf("--iters");
  const iters = i >= 0 ? Number(args[i + 1]) : 200_000;
  const name = `/verbus-${pid}-pingpong`;
  const m = await ShmMapping.create(name, 4096);
  const w = new Int32Array(m.bytes.buffer, m.bytes.byteOffset, 16);
  const script = new URL(import.meta.url).pathname;
  const cmd = RUNTIME === "deno"
    ? [execPath, ["run", "-A", script, "--child", name]]
    : [execPath, [script, "--child", name]];
  const proc = spawn(cmd[0] as string, cmd[1] as string[], { stdio: "inherit" });
  while (Atomics.load(w, 1) === 0) await new Promise((r) => setTimeout(r, 1));
  const lat = new Float64Array(iters);
  let v = 0;
  for (let k = 0; k < iters; k++) {
    const t0 = performance.now();
    Atomics.store(w, 0, ++v); // ping: even → odd
    while (Atomics.load(w, 0) === v) { /* spin */ }
    v++;
    lat[k] = performance.now() - t0;
  }
  Atomics.store(w, 0, -1);
  await new Promise((r) => proc.on("exit", r));
  m.unlink();
  m.close();
  const s = lat.slice(Math.floor(iters / 10)).sort();
  const q = (p: number) => Math.round(s[Math.floor(p * (s.length - 1))] * 1e5) / 100; // µs, 0.01 µs resolution: the p50 is ~0.2 µs
  console.log(JSON.stringify({
    name: "shm-pingpong",
    runtime: RUNTIME,
    iters,
    p50_us: q(0.5),
    p99_us: q(0.99),
    p999_us: q(0.999),
    mean_us: Math.round(s.reduce((a, b) => a + b, 0) / s.length * 1e5) / 100,
  }));
}
