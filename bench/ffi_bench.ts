/**
 * FFI micro-benchmarks (mitata), each against the same work in plain TypeScript in the same
 * process, so only the ratios matter:
 *   1. a no-op helper call (`vb_noop`)            vs  a no-op JS function call
 *   2. batching 16 send descriptors + the helper's no-op post sink (one FFI call)
 *                                                  vs  building the same 16 WRs as JS objects and
 *                                                      walking the chain in TypeScript
 *   3. reading 1 MiB of native (mmap'd) memory through a zero-copy view
 *                                                  vs  reading a 1 MiB JS ArrayBuffer
 * Run: `deno run -A bench/ffi_bench.ts` or `bun bench/ffi_bench.ts` (`make bench-ffi` runs both).
 * Prints mitata's table, then one JSON line with the medians and ratios.
 */
import { bench, do_not_optimize, run, summary } from "mitata";
import { ffi } from "../ffi/ffi.ts";
import { loadHelper } from "../ffi/helper.ts";
import { loadLibc } from "../ffi/libc.ts";
import { MAP_SHARED, PROT_READ, PROT_WRITE } from "../ffi/symbols/libc.ts";
import { IBV_WR } from "../ffi/symbols/libibverbs.ts";
import { RUNTIME } from "../ffi/runtime.ts";
import { SendBatch } from "../transport/verbs/send_batch.ts";

const f = await ffi();
const helper = await loadHelper();
const h = helper.lib.symbols;
const libc = await loadLibc();

// 1. call overhead
function jsNoop(): number {
  return 0;
}
summary(() => {
  bench("js: no-op function call", () => do_not_optimize(jsNoop())).baseline(true);
  bench("ffi: vb_noop() helper call", () => do_not_optimize(h.vb_noop()));
});

// 2. batched post of 16 descriptors
const batch = new SendBatch(16, 16);
interface JsWr {
  wrId: number;
  next: JsWr | null;
  sg: { addr: number; length: number; lkey: number }[];
  opcode: number;
  flags: number;
  remoteAddr: number;
  rkey: number;
}
function jsBuildAndSink(): number {
  let head: JsWr | null = null, prev: JsWr | null = null;
  for (let i = 0; i < 16; i++) {
    const wr: JsWr = {
      wrId: i,
      next: null,
      sg: [{ addr: 0x7f0000000000 + i * 64, length: 64, lkey: 7 }],
      opcode: IBV_WR.RDMA_WRITE,
      flags: i === 15 ? 2 : 0,
      remoteAddr: 0x7f1000000000 + i * 64,
      rkey: 9,
    };
    if (prev) prev.next = wr;
    else head = wr;
    prev = wr;
  }
  let bytes = 0;
  for (let w = head; w; w = w.next) for (const s of w.sg) bytes += s.length;
  return bytes;
}
function ffiBuildAndSink(): number {
  batch.reset();
  for (let i = 0; i < 16; i++) {
    batch.sge(0x7f0000000000 + i * 64, 64, 7);
    batch.wr(IBV_WR.RDMA_WRITE, i === 15 ? 2 : 0, i, 0x7f1000000000 + i * 64, 9, 0);
  }
  return Number(h.vb_bench_sink_post_send(batch.descs, batch.sges, 16));
}
if (ffiBuildAndSink() !== 1024 || jsBuildAndSink() !== 1024) {
  throw new Error("bench self-check failed");
}
summary(() => {
  bench("ts: build 16 WRs as objects + walk the chain", () => do_not_optimize(jsBuildAndSink()))
    .baseline(true);
  bench(
    "ffi: SendBatch 16 WRs + vb_bench_sink_post_send (1 call)",
    () => do_not_optimize(ffiBuildAndSink()),
  );
});

// 3. reading 1 MiB
const MIB = 1 << 20;
const MAP_ANONYMOUS = 0x20;
const mem = libc.symbols.mmap(null, MIB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
if (mem === null) throw new Error("mmap failed");
const native = new Uint32Array(f.view(mem, MIB));
const heap = new Uint32Array(MIB / 4);
for (let i = 0; i < heap.length; i++) native[i] = heap[i] = i;
function sum(a: Uint32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s = (s + a[i]) | 0;
  return s;
}
summary(() => {
  bench("ts: sum 1 MiB of a JS ArrayBuffer", () => do_not_optimize(sum(heap))).baseline(true);
  bench("ffi: sum 1 MiB of mmap'd memory through a view", () => do_not_optimize(sum(native)));
  bench(
    "ffi: new view over 1 MiB + sum",
    () => do_not_optimize(sum(new Uint32Array(f.view(mem, MIB)))),
  );
});

const res = await run();
const med: Record<string, number> = {};
for (const t of res.benchmarks) {
  const st = t.runs[0]?.stats as { p50?: number } | undefined;
  if (st?.p50 !== undefined) med[t.alias] = st.p50;
}
const ratio = (a: string, b: string) => +(med[a] / med[b]).toFixed(2);
console.log(JSON.stringify({
  runtime: RUNTIME,
  median_ns: Object.fromEntries(Object.entries(med).map(([k, v]) => [k, +v.toFixed(1)])),
  ratios: {
    noop_call_ffi_vs_js: ratio("ffi: vb_noop() helper call", "js: no-op function call"),
    batch16_ffi_vs_ts: ratio(
      "ffi: SendBatch 16 WRs + vb_bench_sink_post_send (1 call)",
      "ts: build 16 WRs as objects + walk the chain",
    ),
    read1mib_native_vs_heap: ratio(
      "ffi: sum 1 MiB of mmap'd memory through a view",
      "ts: sum 1 MiB of a JS ArrayBuffer",
    ),
  },
}));
libc.symbols.munmap(mem, MIB);
