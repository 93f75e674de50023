/**
 * The JS limit of a promise-per-call shared-memory RPC: two processes, one shared mapping (two pages), 32 slots
 * of 64 B, one promise per call, no meta and no dispatch (the server copies each request into the
 * response slot). Issue 11's baseline for "≥ 25 % of a minimal shared-memory ring of the same
 * runtime". Run as
 *   deno run -A bench/e2e/baselines/shm_ring.ts [--inflight 32] [--calls 400000] [--payload 64]
 *   bun bench/e2e/baselines/shm_ring.ts [...]            [--yield-every 16 (0 = pure spin)]
 * Prints one JSON line {name, runtime, inflight, calls, qps, p50_us, p99_us, cpu_us,
 * server_cpu_us} (p50/p99 from every 8th call, timed from submit to the caller's continuation;
 * the CPU time of each side over the measured calls, µs user and kernel).
 *
 * Page layout (u32 words): word 0 = stop flag, word 1 = child ready; request states at words
 * 16..47, response states at 48..79 (0 = free, 1 = READY); request bodies from byte 512, response
 * bodies from byte 512 + 32 × 64. Both sides busy-poll (no futex) and, like verbus's loop on a
 * busy host, give the core away (`sched_yield`) after every 16 empty passes, so the baseline is
 * not starved on an oversubscribed machine.
 * @module
 */
import { spawn } from "node:child_process";
import { cpuUsage, execPath, pid } from "node:process";
import { setImmediate } from "node:timers";
import { processAlive, ShmMapping } from "../../../transport/shm/shm_object.ts";
import { RUNTIME } from "../../../ffi/runtime.ts";
import { arg, ARGS, numArg } from "../../common/args.ts";
import { cpuYielder } from "../../../transport/cpu.ts";
import { type CpuMicros, minusUsage, procUsage, usageMicros } from "../../common/proc_cpu.ts";

const yieldCpu = await cpuYielder();
/** Empty passes between two `sched_yield`s (`--yield-every`, 0 = never: a pure spin). */
const YIELD_EVERY = numArg("yield-every", 16);

const SLOTS = 32, SLOT = 64, PAGE = 8192;
const REQ_STATE = 16, RESP_STATE = 48, REQ_BODY = 512, RESP_BODY = 512 + SLOTS * SLOT;

const childAt = ARGS.indexOf("--child");
if (childAt >= 0) {
  const m = await ShmMapping.open(ARGS[childAt + 1], PAGE);
  const b = m.bytes, w = new Int32Array(b.buffer, b.byteOffset, PAGE >> 2);
  const len = numArg("payload", 64);
  const parent = numArg("parent", 0);
  let empty = 0;
  Atomics.store(w, 1, 1);
  for (let round = 1; Atomics.load(w, 0) === 0; round++) {
    // A parent that died (killed by a timeout) must not leave this spinning for good.
    if ((round & 0xfffff) === 0 && parent > 0 && !processAlive(parent)) break;
    let n = 0;
    for (let i = 0; i < SLOTS; i++) {
      if (Atomics.load(w, REQ_STATE + i) !== 1) continue;
      b.copyWithin(RESP_BODY + i * SLOT, REQ_BODY + i * SLOT, REQ_BODY + i * SLOT + len);
      Atomics.store(w, REQ_STATE + i, 0);
      Atomics.store(w, RESP_STATE + i, 1);
      n++;
    }
    if (n > 0) empty = 0;
    else if (++empty === YIELD_EVERY) {
      empty = 0;
      yieldCpu();
    }
  }
  m.close();
} else {
  const inflight = Math.min(SLOTS, numArg("inflight", 32));
  const calls = numArg("calls", 400_000), len = numArg("payload", 64);
  const name = `/verbus-${pid}-ring${arg("tag", "")}`;
  const m = await ShmMapping.create(name, PAGE);
  const b = m.bytes, w = new Int32Array(b.buffer, b.byteOffset, PAGE >> 2);
  const script = new URL(import.meta.url).pathname;
  const a = [
    "--child",
    name,
    "--payload",
    String(len),
    "--parent",
    String(pid),
    "--yield-every",
    String(YIELD_EVERY),
  ];
  const cmd = RUNTIME === "deno"
    ? [execPath, ["run", "-A", script, ...a]]
    : [execPath, [script, ...a]];
  const proc = spawn(cmd[0] as string, cmd[1] as string[], { stdio: "inherit" });
  while (Atomics.load(w, 1) === 0) await new Promise((r) => setTimeout(r, 1));

  const resolvers: (((r: Uint8Array) => void) | null)[] = new Array(SLOTS).fill(null);
  const free: number[] = [];
  for (let i = SLOTS - 1; i >= 0; i--) free.push(i);
  let pending: ((r: Uint8Array) => void) | null = null;
  const executor = (res: (r: Uint8Array) => void) => (pending = res);
  /** One call: a slot, the body, READY, one promise. */
  const call = (req: Uint8Array): Promise<Uint8Array> => {
    const i = free.pop()!;
    b.set(req, REQ_BODY + i * SLOT);
    Atomics.store(w, REQ_STATE + i, 1);
    const p = new Promise<Uint8Array>(executor);
    resolvers[i] = pending;
    return p;
  };
  let running = true;
  /** The poll loop: completes every READY answer, then lets the callers run. */
  let idle = 0;
  const loop = async () => {
    while (running) {
      let n = 0;
      for (let i = 0; i < SLOTS; i++) {
        const r = resolvers[i];
        if (r === null || Atomics.load(w, RESP_STATE + i) !== 1) continue;
        Atomics.store(w, RESP_STATE + i, 0);
        resolvers[i] = null;
        free.push(i);
        r(b.slice(RESP_BODY + i * SLOT, RESP_BODY + i * SLOT + len));
        n++;
      }
      if (n > 0) {
        idle = 0;
        await undefined; // the callers just resolved submit their next calls
      } else {
        if (YIELD_EVERY > 0 && ++idle % YIELD_EVERY === 0) yieldCpu();
        else if (YIELD_EVERY === 0) idle++;
        if (idle % 256 === 0) await new Promise((r) => setImmediate(r));
      }
    }
  };
  const lat = new Float64Array(Math.ceil(calls / 8) + inflight);
  let nLat = 0, done = 0;
  const req = new Uint8Array(len).fill(7);
  const worker = async (count: number) => {
    for (let k = 0; k < count; k++) {
      if ((done++ & 7) === 0) {
        const t0 = performance.now();
        await call(req);
        lat[nLat++] = performance.now() - t0;
      } else {
        const r = await call(req);
        if (r.length !== len) throw new Error("short answer");
      }
    }
  };
  const warm = Math.min(20_000, calls);
  const run = async (total: number) => {
    const per = Math.floor(total / inflight);
    await Promise.all(Array.from({ length: inflight }, () => worker(per)));
    return per * inflight;
  };
  const exited = new Promise((r) => proc.on("exit", r));
  const looping = loop();
  let n = 0, secs = 0;
  let cpu: CpuMicros = { user: 0, system: 0 }, childCpu = cpu;
  try {
    await run(warm);
    nLat = 0;
    done = 0;
    const child0 = procUsage(proc.pid!, { switches: false }), cpu0 = cpuUsage();
    const t0 = performance.now();
    n = await run(calls);
    secs = (performance.now() - t0) / 1000;
    cpu = cpuUsage(cpu0);
    childCpu = usageMicros(minusUsage(procUsage(proc.pid!, { switches: false }), child0));
  } finally {
    running = false;
    await looping;
    Atomics.store(w, 0, 1); // the child stops
    await exited;
    m.unlink();
    m.close();
  }
  const s = lat.slice(0, nLat).sort();
  const q = (p: number) => Math.round(s[Math.floor(p * (s.length - 1))] * 1e4) / 10;
  console.log(JSON.stringify({
    name: "shm-ring",
    runtime: RUNTIME,
    inflight,
    calls: n,
    qps: Math.round(n / secs),
    mean_us: Math.round((s.reduce((x, y) => x + y, 0) / s.length) * 1e4) / 10,
    p50_us: q(0.5),
    p99_us: q(0.99),
    p999_us: q(0.999),
    // CPU over the measured calls, µs user and kernel: this side (getrusage), the echoing child (/proc)
    cpu_us: { user: cpu.user, system: cpu.system },
    server_cpu_us: childCpu,
  }));
}
