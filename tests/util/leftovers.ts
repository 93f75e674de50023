/**
 * What a test run leaves behind, found from /proc and the temp directory, for the runner's
 * post-suite check (`tests/run.ts`) and for tests of scripts that start processes:
 *
 * - processes: every live process whose ancestry includes a given pid, and every live process
 *   whose environment carries a given `NAME=value` (a child the runner started that was orphaned
 *   — reparented to init when its parent died — keeps the runner's marker in its environment,
 *   while its ancestry no longer leads back to the runner);
 * - temp entries: names in a directory that were not there before.
 *
 * Linux only (/proc). Everything here is synchronous and reads only; {@link killAll} sends
 * signals. The main JS thread of a test process.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

/** One live process: its pid, parent and command line (NULs as spaces, cut to 200 characters). */
export interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly cmdline: string;
}

/** `/proc/<pid>/stat`'s state and parent, or undefined when the process is gone. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: parse after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0], ppid: Number(rest[1]) };
}

function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "latin1").replace(/\0/g, " ").trim()
      .slice(0, 200);
  } catch {
    return "";
  }
}

/** Every live, non-zombie process (a zombie has ended; only its exit status is left). */
function liveProcesses(): Map<number, { ppid: number }> {
  const out = new Map<number, { ppid: number }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const s = stat(pid);
    if (s && s.state !== "Z") out.set(pid, { ppid: s.ppid });
  }
  return out;
}

/** Whether process `pid` is alive (exists and is not a zombie). */
export function isAlive(pid: number): boolean {
  const s = stat(pid);
  return s !== undefined && s.state !== "Z";
}

/**
 * Live processes descending from `root` (not `root` itself), plus those whose environment holds
 * `marker` (`NAME=value`) when given. Processes that vanish while scanned are skipped.
 */
export function leftoverProcesses(root: number, marker?: string): ProcessInfo[] {
  const all = liveProcesses();
  const found = new Map<number, ProcessInfo>();
  for (const [pid, { ppid }] of all) {
    if (pid === root) continue;
    let at = ppid, hops = 0;
    // Bounded walk: a pid reused while scanning cannot loop it forever.
    while (at > 1 && at !== root && hops++ < 256) at = all.get(at)?.ppid ?? 0;
    if (at === root) found.set(pid, { pid, ppid, cmdline: cmdlineOf(pid) });
  }
  if (marker !== undefined) {
    for (const [pid, { ppid }] of all) {
      if (pid === root || found.has(pid)) continue;
      if (hasEnv(pid, marker)) found.set(pid, { pid, ppid, cmdline: cmdlineOf(pid) });
    }
  }
  return [...found.values()].filter((p) => isAlive(p.pid));
}

/** Whether `/proc/<pid>/environ` (the environment it was started with) holds `entry`. */
export function hasEnv(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, "latin1").split("\0").includes(entry);
  } catch {
    return false; // gone, or not ours to read
  }
}

/**
 * Sends `signal` to each pid, then waits up to `waitMs` for them all to end. Returns the pids
 * still alive after that.
 */
export async function killAll(
  pids: readonly number[],
  signal: NodeJS.Signals = "SIGKILL",
  waitMs = 2000,
): Promise<number[]> {
  // deno-lint-ignore no-explicit-any
  const proc = (globalThis as any).process;
  for (const pid of pids) {
    try {
      proc.kill(pid, signal);
    } catch { /* already gone */ }
  }
  const until = Date.now() + waitMs;
  let alive = pids.filter(isAlive);
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
    alive = alive.filter(isAlive);
  }
  return alive;
}

/** The names in `dir` that match `pattern` (empty when `dir` cannot be read). */
export function entriesOf(dir: string, pattern: RegExp = /./): Set<string> {
  try {
    return new Set(readdirSync(dir).filter((n) => pattern.test(n)));
  } catch {
    return new Set();
  }
}

/** The names in `after` that are not in `before`, sorted. */
export function added(before: ReadonlySet<string>, after: ReadonlySet<string>): string[] {
  return [...after].filter((n) => !before.has(n)).sort();
}
