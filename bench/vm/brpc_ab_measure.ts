/**
 * One measured flight of `brpc_rdma_ab.ts`: calls/s at N in flight (`brpc_bench_calls.ts`) with
 * the work per call of both processes — CPU split into user and kernel time, context switches of
 * all their threads, native calls (`ffi_counts.ts`: the client's own counts of the side's
 * checkout, the server's through its SIGUSR2 dump) and engine turns where there is an engine.
 * @module
 */
import process from "node:process";
import { existsSync, readFileSync } from "node:fs";
import { type Call, flight } from "./brpc_bench_calls.ts";
import {
  contextSwitches,
  countsFile,
  cpuSplit,
  diffCounts,
  type NativeCounts,
  zeroCounts,
} from "./ffi_counts.ts";

/** What the client knows of one side. */
export interface Side {
  /** The client's counts of this side's checkout (null: not counted, e.g. TCP). */
  counts: NativeCounts | null;
  /** The client's engine loop counters of this side, if it has an engine. */
  loop: (() => Record<string, number>) | null;
  serverPid: number;
}

/** Work per call of one process. */
export interface PerCall {
  userUs: number;
  sysUs: number;
  ctxVol: number;
  ctxInvol: number;
  turns: number;
  native: NativeCounts;
}

/** One flight's figures. */
export interface Measured {
  callsPerS: number;
  client: PerCall;
  server: PerCall;
}

interface Dump {
  seq: number;
  counts: NativeCounts;
  loop: Record<string, number> | null;
}

let lastSeq = new Map<number, number>();

/** Asks the server role for its counts and waits for them (2 s at most). */
async function serverDump(pid: number): Promise<Dump> {
  const want = (lastSeq.get(pid) ?? 0) + 1;
  process.kill(pid, "SIGUSR2");
  const file = countsFile(pid);
  for (let i = 0; i < 200; i++) {
    await new Promise((r) => setTimeout(r, 10));
    if (!existsSync(file)) continue;
    try {
      const d = JSON.parse(readFileSync(file, "utf8")) as Dump;
      if (d.seq >= want) {
        lastSeq.set(pid, d.seq);
        return d;
      }
    } catch { /* being written */ }
  }
  return { seq: 0, counts: zeroCounts(), loop: null };
}

function snap(pid: number | "self", counts: NativeCounts | null, turns: number) {
  return {
    cpu: cpuSplit(pid),
    ctx: contextSwitches(pid),
    counts: { ...(counts ?? zeroCounts()) },
    turns,
  };
}

function perCall(a: ReturnType<typeof snap>, b: ReturnType<typeof snap>, n: number): PerCall {
  const native = diffCounts(a.counts, b.counts);
  for (const k of Object.keys(native) as (keyof NativeCounts)[]) native[k] /= n;
  return {
    userUs: (b.cpu.user - a.cpu.user) / n,
    sysUs: (b.cpu.sys - a.cpu.sys) / n,
    ctxVol: (b.ctx.vol - a.ctx.vol) / n,
    ctxInvol: (b.ctx.invol - a.ctx.invol) / n,
    turns: (b.turns - a.turns) / n,
    native,
  };
}

/** `total` calls, `inFlight` at a time, with both processes' work per call. */
export async function measuredFlight(
  call: Call,
  inFlight: number,
  total: number,
  side: Side,
): Promise<Measured> {
  const s0 = await serverDump(side.serverPid);
  const sa = snap(side.serverPid, s0.counts, s0.loop?.turns ?? 0);
  const ca = snap("self", side.counts, side.loop?.().turns ?? 0);
  const f = await flight(call, inFlight, total, side.serverPid);
  const cb = snap("self", side.counts, side.loop?.().turns ?? 0);
  const s1 = await serverDump(side.serverPid);
  const sb = snap(side.serverPid, s1.counts, s1.loop?.turns ?? 0);
  return { callsPerS: f.callsPerS, client: perCall(ca, cb, total), server: perCall(sa, sb, total) };
}

/** Resets what {@link serverDump} remembers (a new set of servers). */
export function resetDumps(): void {
  lastSeq = new Map();
}
