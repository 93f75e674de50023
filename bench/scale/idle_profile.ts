/**
 * Where an idle server's CPU goes with N sessions connected (issue 10: idle server CPU < 1 %).
 * Runs under Deno:
 *
 *   node_modules/.bin/deno run -A bench/scale/idle_profile.ts [--runtime bun|deno]
 *       [--sessions 10000] [--idle-ms 10000] [--settle-ms 20000] [--root DIR] [--env K=V,K=V]
 *       [--perf] [--heap] [--rounds 1] [--out DIR --name NAME]
 *
 * Starts `server.ts` and `client.ts` (same runtime, as `run.ts` does) with N small shm sessions;
 * the client makes a few ECHO calls, then keeps every session idle: a window of `--idle-ms` right
 * after the calls ("first"), then `--settle-ms` more, then another window ("settled"). Over each
 * window this script reads the server's threads from `/proc/<pid>/task/*∕stat` (CPU time of each,
 * by thread name: the JS thread, JSC's HeapHelper / collector threads, the allocator's
 * scavenger), next to the server's CPU the client measured. `--heap`: the server's JS heap
 * before and after (`bench.Scale/Heap`: on Bun `bun:jsc` heapStats — heap bytes, the extra
 * memory JSC charges for ArrayBuffers, object count, every object type's count; the walk costs
 * the server CPU, so the first window then starts after it). `--env` is set for both children
 * (e.g. `BUN_GC_TIMER_DISABLE=1` to see what Bun's GC timer costs, `BUN_JSC_logGC=1` to have the
 * collections in the server's stderr); `--perf` also runs `perf record -g` on the server over
 * each window and prints the top symbols (Bun's binary has no symbols: threads and DSOs only).
 * `--rounds R` repeats the whole thing (fresh processes) and reports each round.
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { arg, ARGS, sleep, within } from "../common/args.ts";
import {
  command,
  fdLimit,
  type Rt,
  SELF_ROOT,
  serverPort,
  start,
  stop,
  sweepShm,
} from "./procs.ts";

const RT = arg("runtime", "bun") as Rt;
const N = Number(arg("sessions", "10000"));
const IDLE_MS = Number(arg("idle-ms", "10000"));
const ROOT = resolve(arg("root", SELF_ROOT));
const SETTLE_MS = Number(arg("settle-ms", "20000"));
const ROUNDS = Math.max(1, Number(arg("rounds", "1")));
const PERF = ARGS.includes("--perf");
const HEAP = ARGS.includes("--heap");
const ENV: Record<string, string> = Object.fromEntries(
  arg("env", "").split(",").filter((kv) => kv.includes("=")).map((kv) => {
    const i = kv.indexOf("=");
    return [kv.slice(0, i), kv.slice(i + 1)];
  }),
);
const CLK_TCK = 100;
const FD = fdLimit();

/** CPU ticks (user + system) of every thread of `pid`, summed by thread name. */
function threads(pid: number): Map<string, { ticks: number; count: number }> {
  const out = new Map<string, { ticks: number; count: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const name = s.slice(s.indexOf("(") + 1, s.lastIndexOf(")")).replace(/\d+$/, "#");
      const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
      const t = Number(f[11]) + Number(f[12]);
      const r = out.get(name) ?? { ticks: 0, count: 0 };
      r.ticks += t;
      r.count++;
      out.set(name, r);
    } catch { /* the thread ended */ }
  }
  return out;
}

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

async function waitEvent(p: { lines: () => string[] }, event: string, ms: number): Promise<Json> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    for (const l of p.lines()) {
      try {
        const j = JSON.parse(l);
        if (j.event === event) return j;
      } catch { /* partial */ }
    }
    await sleep(50);
  }
  throw new Error(`no "${event}" from the client within ${ms} ms`);
}

function perfTop(file: string): string {
  const r = spawnSync("perf", [
    "report",
    "-i",
    file,
    "--no-children",
    "--sort",
    "comm,dso,sym",
    "--stdio",
    "--percent-limit",
    "1.5",
    "-g",
    "none",
  ], { encoding: "utf8", maxBuffer: 64 << 20 });
  return (r.stdout ?? "").split("\n").filter((l) => l.trim() && !l.startsWith("#")).slice(0, 40)
    .join("\n");
}

/** Per-thread CPU % of `pid` between two {@link threads} samples `ms` apart. */
function threadPct(
  t0: ReturnType<typeof threads>,
  t1: ReturnType<typeof threads>,
  ms: number,
): { byThread: Json; total: number } {
  const byThread: Json = {};
  let total = 0;
  const pct = (ticks: number) => Math.round(((ticks / CLK_TCK) * 1000 / ms) * 1000) / 10;
  for (const [name, r] of t1) {
    const ticks = r.ticks - (t0.get(name)?.ticks ?? 0);
    total += ticks;
    if (ticks !== 0) byThread[`${name} ×${r.count}`] = pct(ticks);
  }
  return { byThread, total: pct(total) };
}

/** Samples `pid`'s threads from the client's event `from` to its event `to`. */
async function window(
  client: { lines: () => string[] },
  pid: number,
  from: string,
  to: string,
): Promise<Json> {
  await waitEvent(client, from, 170_000);
  const t0 = threads(pid), w0 = performance.now();
  let perfFile = "";
  let perfRun: Promise<unknown> | null = null;
  if (PERF) {
    perfFile = join(mkdtempSync(join(tmpdir(), "verbus-idle-perf-")), "perf.data");
    const secs = Math.max(1, Math.floor(IDLE_MS / 1000) - 2);
    const p = start(
      [
        "perf",
        "record",
        "-g",
        "-F",
        "499",
        "-p",
        String(pid),
        "-o",
        perfFile,
        "--",
        "sleep",
        String(secs),
      ],
      ROOT,
    );
    perfRun = p.exited;
  }
  const ev = await waitEvent(client, to, IDLE_MS + SETTLE_MS + 60_000);
  const t1 = threads(pid), w1 = performance.now();
  if (perfRun) await within(perfRun, 10_000);
  const { byThread, total } = threadPct(t0, t1, w1 - w0);
  return {
    serverCpuPct: ev.serverCpuPct,
    clientCpuPct: ev.clientCpuPct,
    loopPerS: ev.serverLoopPerS,
    threadsPct: byThread,
    threadsTotalPct: total,
    perf: PERF ? perfTop(perfFile) : undefined,
  };
}

async function round(k: number): Promise<Json> {
  const load = loadavg()[0];
  const server = start(command(RT, ROOT, FD.limit, "server.ts", ["--fabric", "shm"]), ROOT, ENV);
  const { port, pid } = await serverPort(server);
  if (!port) throw new Error(`server did not start: ${server.stderr()}`);
  const client = start(
    command(RT, ROOT, FD.limit, "client.ts", [
      "--port",
      String(port),
      "--sessions",
      String(N),
      "--calls",
      "500",
      "--warmup",
      "100",
      "--idle-ms",
      String(IDLE_MS),
      "--settle-ms",
      String(SETTLE_MS),
      ...(HEAP ? ["--heap"] : []),
      "--max-seconds",
      String(Math.max(180, Math.ceil((2 * IDLE_MS + SETTLE_MS) / 1000) * 3)),
    ]),
    ROOT,
    ENV,
  );
  try {
    const setup = await waitEvent(client, "setup", 170_000);
    // The first window: from the ECHO phase's end (the client's first sample follows at once).
    const first = await window(client, pid, "echo", "idle");
    const settled = SETTLE_MS > 0
      ? await window(client, pid, "settledStart", "idleSettled")
      : undefined;
    const heap = HEAP ? await waitEvent(client, "heap", 120_000) : undefined;
    return {
      round: k,
      load,
      loadAfter: loadavg()[0],
      sessions: setup.reached,
      onFabric: setup.onFabric,
      first,
      settled,
      heapBefore: heap?.before,
      heapAfter: heap?.after,
    };
  } finally {
    await stop(client);
    await stop(server);
    sweepShm([pid, client.pid]);
  }
}

const results: Json[] = [];
for (let k = 1; k <= ROUNDS; k++) {
  const r = await round(k);
  results.push(r);
  const { heapBefore, heapAfter, first, settled, ...rest } = r;
  const brief = (w: Json | undefined) => w && { ...w, perf: undefined };
  console.log(JSON.stringify({ ...rest, first: brief(first), settled: brief(settled) }));
  for (const w of [first, settled]) if (w?.perf) console.log(w.perf);
  const noTypes = (h: Json | undefined) => h && { ...h, types: undefined };
  console.log(`  heap before ${JSON.stringify(noTypes(heapBefore))}`);
  console.log(`  heap after  ${JSON.stringify(noTypes(heapAfter))}`);
  if (heapAfter?.types) {
    const top = Object.entries(heapAfter.types as Record<string, number>).slice(0, 25);
    console.log(`  types ${JSON.stringify(Object.fromEntries(top))}`);
    // Object types whose count changed over the window (with no collection in it, e.g.
    // BUN_GC_TIMER_DISABLE=1: what the idle server allocated).
    const before = (heapBefore?.types ?? {}) as Record<string, number>;
    const delta = Object.entries(heapAfter.types as Record<string, number>)
      .map(([t, n]) => [t, n - (before[t] ?? 0)] as const).filter(([, d]) => d !== 0)
      .sort((a, b) => Math.abs(b[1]) - Math.abs(a[1])).slice(0, 20);
    console.log(`  types changed ${JSON.stringify(Object.fromEntries(delta))}`);
  }
}
const name = arg("name", "");
if (name) {
  const out = resolve(arg("out", join(SELF_ROOT, "bench/results")));
  mkdirSync(out, { recursive: true });
  writeFileSync(
    join(out, `${name}.json`),
    JSON.stringify(
      { runtime: RT, sessions: N, idleMs: IDLE_MS, root: ROOT, env: ENV, results },
      null,
      2,
    ) +
      "\n",
  );
}
