/**
 * What an idle Bun process's garbage collector costs, by what the heap holds (issue 10: Bun idle
 * server CPU). Bun only:
 *
 *   BUN_JSC_logGC=1 bun bench/profile/bun_gc_idle.ts [--objects 2000000] [--views 10000]
 *       [--view-kib 900] [--aborts 0] [--sockets 0] [--promises 0] [--asyncs 0]
 *       [--alloc-per-s 0] [--worker 0|1] [--counter 0|1] [--seconds 20] 2> gc.log
 *
 * Builds a heap like a server's with many sessions — plain objects, `toArrayBuffer` views of
 * anonymous mappings (JSC charges each as extra memory and keeps it as an opaque root),
 * AbortControllers with a listener on their signal, loopback TCP socket pairs, pending promises,
 * suspended async functions — lets it settle 8 s, then prints one JSON line: CPU % over the
 * window, per thread (/proc/self/task), extra and cell memory. With `BUN_JSC_logGC=1` the
 * collections are in stderr between the MARK-START and MARK-END lines (each line's `o=` is the
 * opaque roots, `cycle` its wall time). `--counter 1` counts collections with a
 * FinalizationRegistry sentinel (it allocates one object per collection, which keeps Bun's GC
 * timer in its fast mode: leave it off to see the timer slow down).
 * @module
 */
import { dlopen, FFIType, toArrayBuffer } from "bun:ffi";
import { heapStats } from "bun:jsc";
import { readdirSync, readFileSync } from "node:fs";
const a = (n: string, d: string) => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const OBJECTS = Number(a("objects", "2000000")),
  VIEWS = Number(a("views", "10000")),
  VIEW_KIB = Number(a("view-kib", "900"));
const ALLOC = Number(a("alloc-per-s", "0")),
  SECONDS = Number(a("seconds", "20")),
  WORKER = a("worker", "0") === "1";
const libc = dlopen("libc.so.6", {
  mmap: {
    args: [FFIType.ptr, FFIType.u64, FFIType.i32, FFIType.i32, FFIType.i32, FFIType.i64],
    returns: FFIType.ptr,
  },
});
const keep: unknown[] = [];
for (let i = 0; i < VIEWS; i++) {
  const p = libc.symbols.mmap(null, VIEW_KIB * 1024, 3, 0x22 | 0x4000, -1, 0);
  keep.push(new Uint8Array(toArrayBuffer(p!, 0, VIEW_KIB * 1024)));
}
for (let i = 0; i < OBJECTS; i++) keep.push({ i, s: null as unknown });
const ABORTS = Number(a("aborts", "0"));
for (let i = 0; i < ABORTS; i++) {
  const c = new AbortController();
  c.signal.addEventListener("abort", () => keep.push(i), { once: true });
  keep.push(c);
}
const SOCKETS = Number(a("sockets", "0"));
if (SOCKETS) {
  const srv = Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data() {},
      open(s) {
        keep.push(s);
      },
    },
  });
  for (let i = 0; i < SOCKETS; i++) {
    keep.push(await Bun.connect({ hostname: "127.0.0.1", port: srv.port, socket: { data() {} } }));
  }
}
const PROMISES = Number(a("promises", "0"));
for (let i = 0; i < PROMISES; i++) keep.push(new Promise(() => {}));
const ASYNCS = Number(a("asyncs", "0"));
for (let i = 0; i < ASYNCS; i++) {
  (async () => {
    await new Promise(() => {});
  })();
}

let gcs = 0;
if (a("counter", "1") === "1") {
  const reg = new FinalizationRegistry(() => {
    gcs++;
    reg.register({}, 0);
  });
  reg.register({}, 0);
}
const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const threads = () => {
  const m: Record<string, number> = {};
  for (const t of readdirSync("/proc/self/task")) {
    const s = readFileSync(`/proc/self/task/${t}/stat`, "utf8");
    const n = s.slice(s.indexOf("(") + 1, s.lastIndexOf(")"));
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    m[n] = (m[n] ?? 0) + (Number(f[11]) + Number(f[12])) * 10;
  }
  return m;
};
let sink: unknown = null;
setInterval(() => {
  for (let i = 0; i < ALLOC; i++) sink = { i };
}, 1000);
if (WORKER) {
  const w = new Worker(URL.createObjectURL(new Blob([`setInterval(() => postMessage(1), 2000);`])));
  w.onmessage = () => {};
}
await new Promise((r) => setTimeout(r, 8000)); // settle
console.error("MARK-START");
const h0 = heapStats(), c0 = cpu(), t0 = threads(), g0 = gcs, w0 = performance.now();
await new Promise((r) => setTimeout(r, SECONDS * 1000));
console.error("MARK-END");
const h1 = heapStats(), c1 = cpu(), t1 = threads(), w1 = performance.now();
const pct = (ms: number) => Math.round(ms / (w1 - w0) * 1000) / 10;
const th: Record<string, number> = {};
for (const k in t1) {
  const d = t1[k] - (t0[k] ?? 0);
  if (d) th[k] = pct(d);
}
console.log(JSON.stringify({
  SOCKETS,
  ABORTS,
  PROMISES,
  ASYNCS,
  OBJECTS,
  VIEWS,
  VIEW_KIB,
  ALLOC,
  WORKER,
  cpuPct: pct(c1 - c0),
  gcs: gcs - g0,
  extraMiB: Math.round(h1.extraMemorySize / 2 ** 20),
  cellMiB: Math.round((h1.heapSize - h1.extraMemorySize) / 2 ** 20),
  capDelta: h1.heapCapacity - h0.heapCapacity,
  th,
}));
void sink;
void keep;
process.exit(0);
