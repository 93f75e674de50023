/**
 * Per-call counts for the brpc RDMA A/B (`brpc_rdma_ab.ts`): wraps the native calls of one
 * checkout's helper and libc with counting functions, so the same counts come out of any version
 * of verbus (A's per-connection loop and B's progress engine alike) without touching its code:
 * CQ polls (and the empty ones), completions reaped, `ibv_post_send` / `ibv_post_recv` calls,
 * CQ arms, completion-channel waits, eventfd signals and `sched_yield`s. Add the context switches
 * of every thread of a process (/proc) and its CPU split into user and kernel time.
 *
 * Measurement only: each counted call costs one more JS call. Linux only (/proc).
 * Threading: the JS thread that loaded the helper.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** Counts of one process's native calls (all monotonic). */
export interface NativeCounts {
  polls: number;
  emptyPolls: number;
  completions: number;
  postSends: number;
  postRecvs: number;
  arms: number;
  cqWaits: number;
  wakeSignals: number;
  yields: number;
}

/** A zeroed {@link NativeCounts}. */
export function zeroCounts(): NativeCounts {
  return {
    polls: 0,
    emptyPolls: 0,
    completions: 0,
    postSends: 0,
    postRecvs: 0,
    arms: 0,
    cqWaits: 0,
    wakeSignals: 0,
    yields: 0,
  };
}

// deno-lint-ignore no-explicit-any
type Fn = (...a: any[]) => any;
// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

function wrap(o: Obj, name: string, f: (orig: Fn) => Fn): void {
  const orig = o[name];
  if (typeof orig === "function") o[name] = f(orig);
}

/**
 * Wraps the helper and libc of the checkout at `root` (loaded now if not yet) and returns the
 * live counts. Call before anything of that checkout opens a device. Idempotent per root.
 */
export async function instrument(root: string): Promise<NativeCounts> {
  const g = globalThis as Obj;
  const reg: Map<string, NativeCounts> = (g.__vbNativeCounts ??= new Map());
  const have = reg.get(root);
  if (have) return have;
  const c = zeroCounts();
  reg.set(root, c);
  const { loadHelper } = await import(join(root, "ffi/helper.ts"));
  const { loadLibc } = await import(join(root, "ffi/libc.ts"));
  const helper = await loadHelper();
  const s: Obj = helper.lib.symbols, nb: Obj = helper.lib.nonblocking;
  wrap(s, "vb_poll_cq", (o) => (...a) => {
    const n = o(...a);
    c.polls++;
    if (n <= 0) c.emptyPolls++;
    else c.completions += n;
    return n;
  });
  wrap(s, "vb_post_send", (o) => (...a) => (c.postSends++, o(...a)));
  wrap(s, "vb_post_recv", (o) => (...a) => (c.postRecvs++, o(...a)));
  wrap(s, "vb_req_notify_cq", (o) => (...a) => (c.arms++, o(...a)));
  wrap(s, "vb_eventfd_signal", (o) => (...a) => (c.wakeSignals++, o(...a)));
  wrap(nb, "vb_get_cq_event", (o) => (...a) => (c.cqWaits++, o(...a)));
  wrap(nb, "vb_get_cq_event_or_wake", (o) => (...a) => (c.cqWaits++, o(...a)));
  try {
    const libc = await loadLibc();
    wrap(libc.symbols as Obj, "sched_yield", (o) => (...a) => (c.yields++, o(...a)));
  } catch { /* no libc: no yields to count */ }
  return c;
}

/** `b - a`, field by field. */
export function diffCounts(a: NativeCounts, b: NativeCounts): NativeCounts {
  const d = zeroCounts();
  for (const k of Object.keys(d) as (keyof NativeCounts)[]) d[k] = b[k] - a[k];
  return d;
}

/** CPU of process `pid` so far, µs: user and kernel apart (clock ticks of 10 ms). */
export function cpuSplit(pid: number | "self"): { user: number; sys: number } {
  const st = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
  return { user: Number(f[11]) * 10_000, sys: Number(f[12]) * 10_000 };
}

/** Context switches (voluntary, involuntary) of every thread of process `pid` so far. */
export function contextSwitches(pid: number | "self"): { vol: number; invol: number } {
  let vol = 0, invol = 0;
  const dir = `/proc/${pid}/task`;
  for (const t of readdirSync(dir)) {
    try {
      const s = readFileSync(`${dir}/${t}/status`, "utf8");
      vol += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(s)?.[1] ?? 0);
      invol += Number(/nonvoluntary_ctxt_switches:\s+(\d+)/.exec(s)?.[1] ?? 0);
    } catch { /* the thread ended */ }
  }
  return { vol, invol };
}

/** Where a server role publishes its counts (the guest's /tmp). */
export function countsFile(pid: number): string {
  return `/tmp/vb_native_counts_${pid}.json`;
}
