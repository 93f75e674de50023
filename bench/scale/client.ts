/**
 * The scale benchmark's client: N sessions to one server from this one process, through the
 * public API only (`connect`, `client.call`).
 *
 *   deno run -A bench/scale/client.ts --port P --sessions N [--concurrency 64] [--calls 5000]
 *       [--warmup 500] [--bytes 64] [--idle-ms 3000] [--settle-ms 0] [--heap] [--max-seconds 180]
 *       [--fabric shm|verbs] [--source-addr A]
 *
 * Phases, each printed as one JSON line as soon as it ends (so a harness that must kill this
 * process still has what was measured):
 * 1. `setup`: opens N clients, `--concurrency` handshakes at a time; sessions/s, how many got the
 *    fabric, fell back to TCP (with the reasons) or failed (with the messages). Stops opening at
 *    55 % of `--max-seconds` (then `complete: false`) and goes on with the sessions it has.
 *    `progress` lines (sessions so far) every second meanwhile.
 * 2. `echo`: `--calls` ECHO of `--bytes` B on the first client, 1 in flight, the others idle;
 *    p50/p99/mean µs and the p50 of the best of 5 rounds (stops at 80 % of `--max-seconds`, then `complete: false`).
 * 3. `idle`: the server's CPU time over `--idle-ms` with every session connected and idle (and
 *    this process's), as % of one core, right after the ECHO phase; with `--settle-ms S`, also
 *    `idleSettled`: the same over `--idle-ms` after S ms more of idling (a runtime's collector
 *    may go on working for a while after activity: Bun's GC timer collects every second until
 *    the heap stops changing). Server figures come from `bench.Scale/Stats` over a separate
 *    TCP-only connection (not a fabric session); the idle samples ask for the CPU time only.
 *    `--heap`: the server's JS heap before and after (event `heap`; `bench.Scale/Heap`).
 *    Then `echoIdle`: the ECHO phase again, now that every session has idled that long (the
 *    runtimes are no longer collecting what the setup left: the steady state of "one active
 *    session among N idle"; stops at 90 % of `--max-seconds`).
 * 4. `wake`: after the idle window, one ECHO on every session in turn; total and per-session
 *    p50/p99 (stops at 95 % of `--max-seconds`, then `complete: false`).
 * Then `result`: everything above in one object, and the process exits 0.
 * @module
 */
import {
  arg,
  ARGS,
  cpuMs,
  emit,
  exit,
  loadVerbus,
  numArg,
  percentile,
  type ProcStats,
  SERVICE,
  SMALL_REGION,
} from "./common.ts";

const { connect, RUNTIME } = await loadVerbus();
const port = numArg("port", 0);
const N = numArg("sessions", 10);
const CONCURRENCY = numArg("concurrency", 64);
const CALLS = numArg("calls", 5000);
const WARMUP = numArg("warmup", 500);
const BYTES = numArg("bytes", 64);
const IDLE_MS = numArg("idle-ms", 3000);
const SETTLE_MS = numArg("settle-ms", 0);
const HEAP = ARGS.includes("--heap");
const MAX_MS = numArg("max-seconds", 180) * 1000;
const FABRIC = arg("fabric", "shm");
/** True when `c` got the fabric asked for (URMA on the simulator is "urma (simulated)"). */
const onAsked = (c: { fabric: string }) =>
  c.fabric === FABRIC || c.fabric === `${FABRIC} (simulated)`;
const SOURCE = arg("source-addr", "");
if (port <= 0) throw new Error("--port is required");

const T0 = performance.now();
const elapsed = () => performance.now() - T0;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const addr = { host: "127.0.0.1", port };
const req = new Uint8Array(BYTES).fill(0x61);
const warnings = new Map<string, number>();
const logger = {
  warn: (m: string) => {
    const k = m.replace(/\d+/g, "#");
    const n = (warnings.get(k) ?? 0) + 1;
    warnings.set(k, n);
    if (n <= 3) console.error(`scale client: ${m}`);
  },
};
const tally = (m: Map<string, number>) =>
  Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).slice(0, 10));
const r1 = (x: number) => Math.round(x * 10) / 10;
const out: Record<string, unknown> = { runtime: RUNTIME, fabric: FABRIC, requested: N };

// The control connection: TCP only, so it is not one of the measured fabric sessions.
const control = await connect(addr, { fabric: "tcp", timeoutMs: 30_000 });
async function serverStats(): Promise<
  ProcStats & { connections: number; loop?: { turns: number; sleeps: number } | null }
> {
  const r = await control.call(SERVICE, "Stats", new Uint8Array(0));
  return JSON.parse(new TextDecoder().decode(r.response));
}
out.serverBefore = await serverStats();

// 1. setup
// deno-lint-ignore no-explicit-any
const clients: any[] = [];
const fallbacks = new Map<string, number>();
const errors = new Map<string, number>();
let started = 0, failed = 0;
const setupDeadline = 0.55 * MAX_MS;
const options = {
  fabric: FABRIC,
  region: SMALL_REGION,
  logger,
  ...(SOURCE ? { providerOptions: { verbs: { sourceAddr: SOURCE } } } : {}),
};
const setupStart = performance.now(), setupCpuStart = cpuMs();
const progress = setInterval(
  () =>
    emit({ event: "progress", sessions: clients.length, failed, elapsedMs: Math.round(elapsed()) }),
  1000,
);
async function opener(): Promise<void> {
  while (started < N && elapsed() < setupDeadline) {
    started++;
    try {
      const c = await connect(addr, options);
      clients.push(c);
      if (!onAsked(c)) {
        const k = String(c.handshake?.reason ?? c.fabric);
        fallbacks.set(k, (fallbacks.get(k) ?? 0) + 1);
      }
    } catch (e) {
      failed++;
      const k = String((e as Error)?.message ?? e).replace(/\d+/g, "#");
      errors.set(k, (errors.get(k) ?? 0) + 1);
    }
  }
}
const openers = Promise.all(Array.from({ length: Math.min(CONCURRENCY, N) }, opener));
// Handshakes in flight at the deadline get 15 s more; a hung one is left behind.
await Promise.race([
  openers,
  (async () => {
    while (elapsed() < setupDeadline) await sleep(100);
    await sleep(15_000);
  })(),
]);
clearInterval(progress);
const setupS = (performance.now() - setupStart) / 1000;
const setupClientCpuMs = cpuMs() - setupCpuStart;
const onFabric = clients.filter(onAsked).length;
out.serverAfterSetup = await serverStats();
// CPU time per session set up (all threads, GC included): does a handshake cost more with more
// sessions open? Robust to a busy machine, unlike sessions/s.
const perSession = (ms: number) => Math.round((ms / Math.max(1, clients.length)) * 1000) / 1000;
out.setup = {
  reached: clients.length,
  onFabric,
  fellBackToTcp: clients.length - onFabric,
  failed,
  complete: clients.length === N,
  seconds: Math.round(setupS * 100) / 100,
  sessionsPerS: Math.round(clients.length / setupS),
  serverCpuMsPerSession: perSession(
    (out.serverAfterSetup as ProcStats).cpuMs - (out.serverBefore as ProcStats).cpuMs,
  ),
  clientCpuMsPerSession: perSession(setupClientCpuMs),
  concurrency: CONCURRENCY,
  fallbackReasons: tally(fallbacks),
  errors: tally(errors),
};
emit({ event: "setup", ...(out.setup as object) });
emit({ event: "serverAfterSetup", ...(out.serverAfterSetup as object) });
if (clients.length === 0) {
  emit({ event: "result", ...out, warnings: tally(warnings) });
  exit(0);
}

// 2. ECHO on one client while the others stay idle: right after the setup (`echo`), and again
// after the idle windows (`echoIdle`), when the sessions have idled for --idle-ms (+ --settle-ms):
// right after setup the runtimes are still collecting what 10,000 handshakes left behind.
const active = clients.find(onAsked) ?? clients[0];
async function echoPhase(deadlineMs: number): Promise<Record<string, unknown>> {
  const first = await active.call(SERVICE, "Echo", req);
  for (let i = 1; i < WARMUP && elapsed() < deadlineMs; i++) {
    await active.call(SERVICE, "Echo", req);
  }
  const lat: number[] = [];
  for (let i = 0; i < CALLS && elapsed() < deadlineMs; i++) {
    const t = performance.now();
    await active.call(SERVICE, "Echo", req);
    lat.push((performance.now() - t) * 1000);
  }
  // The median of the best of 5 consecutive rounds: less sensitive to a co-tenant's burst.
  const round = Math.max(1, Math.floor(lat.length / 5));
  const rounds = Array.from(
    { length: Math.floor(lat.length / round) },
    (_, k) => percentile(lat.slice(k * round, (k + 1) * round).sort((a, b) => a - b), 50),
  );
  lat.sort((a, b) => a - b);
  return {
    calls: lat.length,
    complete: lat.length === CALLS,
    bytes: BYTES,
    path: first.path,
    fabric: first.fabric,
    p50Us: r1(percentile(lat, 50)),
    p99Us: r1(percentile(lat, 99)),
    bestRoundP50Us: r1(Math.min(...rounds)),
    meanUs: r1(lat.reduce((a, b) => a + b, 0) / lat.length),
  };
}
out.echo = await echoPhase(0.8 * MAX_MS); // then it reports the calls it made (complete: false)
emit({ event: "echo", ...(out.echo as object) });

// 3. idle CPU, every session connected and idle: the window right after the calls, and (with
// --settle-ms) one after that long idle. The samples ask the server for its CPU time only, so the
// probe allocates next to nothing there (a full Stats lists 10,000 fds and would wake its GC).
const LIGHT = new Uint8Array([1]);
async function serverCpu(): Promise<
  Pick<ProcStats, "cpuMs" | "atMs"> & { loop?: { turns: number; sleeps: number } | null }
> {
  const r = await control.call(SERVICE, "Stats", LIGHT);
  return JSON.parse(new TextDecoder().decode(r.response));
}
async function serverHeap(): Promise<unknown> {
  if (!HEAP) return null;
  const r = await control.call(SERVICE, "Heap", new Uint8Array(0));
  return JSON.parse(new TextDecoder().decode(r.response));
}
async function idleWindow(ms: number): Promise<Record<string, unknown>> {
  const s1 = await serverCpu();
  const c1 = cpuMs(), w1 = performance.now();
  await sleep(ms);
  const c2 = cpuMs(), w2 = performance.now();
  const s2 = await serverCpu();
  const perS = (a: number, b: number) => r1(((b - a) * 1000) / (s2.atMs - s1.atMs));
  return {
    ms,
    serverCpuPct: r1(((s2.cpuMs - s1.cpuMs) / (s2.atMs - s1.atMs)) * 100),
    // Engine turns and sleeps per second while idle (null: a verbus without loopCounters).
    serverLoopPerS: s1.loop && s2.loop
      ? { turns: perS(s1.loop.turns, s2.loop.turns), sleeps: perS(s1.loop.sleeps, s2.loop.sleeps) }
      : null,
    clientCpuPct: r1(((c2 - c1) / (w2 - w1)) * 100),
  };
}
const heapBefore = await serverHeap();
out.idle = await idleWindow(IDLE_MS);
emit({ event: "idle", ...(out.idle as object) });
if (SETTLE_MS > 0) {
  await sleep(SETTLE_MS);
  emit({ event: "settledStart", afterMs: IDLE_MS + SETTLE_MS });
  out.idleSettled = { afterMs: IDLE_MS + SETTLE_MS, ...await idleWindow(IDLE_MS) };
  emit({ event: "idleSettled", ...(out.idleSettled as object) });
}
out.echoIdle = { afterIdleMs: IDLE_MS + SETTLE_MS, ...await echoPhase(0.9 * MAX_MS) };
emit({ event: "echoIdle", ...(out.echoIdle as object) });
// What the server's JS heap holds (--heap; its walk costs the server CPU, so after the windows).
if (HEAP) emit({ event: "heap", before: heapBefore, after: await serverHeap() });

// 4. wake every session in turn, one call each
const wake: number[] = [];
const wakeErrors = new Map<string, number>();
const wakeStart = performance.now();
const paths = new Map<string, number>();
for (const c of clients) {
  if (elapsed() > 0.95 * MAX_MS) break;
  const t = performance.now();
  try {
    const r = await c.call(SERVICE, "Echo", req, { timeoutMs: 30_000 });
    paths.set(`${r.path}/${r.fabric}`, (paths.get(`${r.path}/${r.fabric}`) ?? 0) + 1);
    wake.push((performance.now() - t) * 1000);
  } catch (e) {
    const k = String((e as Error)?.message ?? e).replace(/\d+/g, "#");
    wakeErrors.set(k, (wakeErrors.get(k) ?? 0) + 1);
  }
}
const wakeTotalMs = performance.now() - wakeStart;
wake.sort((a, b) => a - b);
out.wake = {
  sessions: clients.length,
  answered: wake.length,
  failed: [...wakeErrors.values()].reduce((a, b) => a + b, 0),
  complete: wake.length === clients.length,
  totalMs: Math.round(wakeTotalMs),
  p50Us: r1(percentile(wake, 50)),
  p99Us: r1(percentile(wake, 99)),
  maxUs: r1(wake[wake.length - 1] ?? NaN),
  paths: tally(paths),
  errors: tally(wakeErrors),
};
emit({ event: "wake", ...(out.wake as object) });
out.serverEnd = await serverStats();
emit({ event: "result", ...out, warnings: tally(warnings), seconds: r1(elapsed() / 1000) });
exit(0);
