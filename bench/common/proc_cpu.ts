/**
 * A process's CPU time as Linux accounts it: user and kernel time of all its threads from
 * `/proc/PID/stat` (fields 14 and 15, utime and stime, in clock ticks), and its context switches
 * summed over `/proc/PID/task/*\/status`. The CPU benches (`bench/profile/cpu_split.ts`, the CPU
 * columns of `bench/e2e/run.ts`) read processes through it; tests point `procRoot` at a fake
 * process table. Any thread may call (synchronous file reads).
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

/** CPU ms (user, kernel) and context switches (voluntary, involuntary) of a process, all threads. */
export interface Usage {
  user: number;
  sys: number;
  vcsw: number;
  ivcsw: number;
}

/** Where {@link procUsage} reads. */
export interface ProcOptions {
  /** The process table (default `/proc`). */
  procRoot?: string;
  /** Clock ticks per second of utime/stime (`getconf CLK_TCK`; 100 on Linux's supported ABIs). */
  ticksPerSecond?: number;
  /** Also sum the context switches of every thread (default true; costs a read per thread). */
  switches?: boolean;
}

/**
 * The CPU time of `pid` so far ("self": this process). Throws naming the process when it is gone
 * (its figures are lost with it: read before it exits).
 */
export function procUsage(pid: number | "self", o: ProcOptions = {}): Usage {
  const root = o.procRoot ?? "/proc";
  const ms = 1000 / (o.ticksPerSecond ?? 100);
  let s: string;
  try {
    s = readFileSync(`${root}/${pid}/stat`, "utf8");
  } catch {
    throw new Error(`process ${pid} has no ${root}/${pid}/stat: it ended before it was read`);
  }
  // The command name (field 2) is in parentheses and may hold spaces: count from the last ")".
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  const utime = Number(f[11]), stime = Number(f[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) {
    throw new Error(`${root}/${pid}/stat: no utime/stime in ${JSON.stringify(s.slice(0, 120))}`);
  }
  const u: Usage = { user: utime * ms, sys: stime * ms, vcsw: 0, ivcsw: 0 };
  if (o.switches === false) return u;
  let tids: string[] = [];
  try {
    tids = readdirSync(`${root}/${pid}/task`);
  } catch { /* no task directory: no switch counts */ }
  for (const tid of tids) {
    try {
      const st = readFileSync(`${root}/${pid}/task/${tid}/status`, "utf8");
      u.vcsw += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0);
      u.ivcsw += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(st)?.[1] ?? 0);
    } catch { /* the thread ended */ }
  }
  return u;
}

/** `a - b`, field by field (the usage over a window from two readings). */
export const minusUsage = (a: Usage, b: Usage): Usage => ({
  user: a.user - b.user,
  sys: a.sys - b.sys,
  vcsw: a.vcsw - b.vcsw,
  ivcsw: a.ivcsw - b.ivcsw,
});

/** The sum of several processes' usages. */
export const sumUsage = (us: Usage[]): Usage =>
  us.reduce((a, b) => ({
    user: a.user + b.user,
    sys: a.sys + b.sys,
    vcsw: a.vcsw + b.vcsw,
    ivcsw: a.ivcsw + b.ivcsw,
  }), { user: 0, sys: 0, vcsw: 0, ivcsw: 0 });

/** CPU time as a bench child reports it: µs of user and of kernel time (`process.cpuUsage()`). */
export interface CpuMicros {
  user: number;
  system: number;
}

/**
 * µs of CPU per call: `cpu` spent on `calls` calls (null when none were made); user + kernel, or
 * only the kernel's part (`part` "system").
 */
export function microsPerCall(
  cpu: CpuMicros[],
  calls: number,
  part: "all" | "system" = "all",
): number | null {
  if (!(calls > 0)) return null;
  const total = cpu.reduce((a, c) => a + (part === "all" ? c.user : 0) + c.system, 0);
  return +(total / calls).toFixed(3);
}

/** A {@link Usage} window (ms) as {@link CpuMicros}. */
export const usageMicros = (u: Usage): CpuMicros => ({ user: u.user * 1000, system: u.sys * 1000 });
