/**
 * Session objects of this process as the tests see them: the shm fabric's sealed memfds
 * (`memfd:verbus-<pid>-<session>`), mapped (in /proc/self/maps) or held open (in /proc/self/fd).
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const MEMFD = /memfd:(verbus-\d+-\d+)/;

/** Names (`verbus-<pid>-<session>`) of the session memfds this process maps or holds open. */
export function liveSessionObjects(): Set<string> {
  const out = heldSessionFds();
  for (const l of readFileSync("/proc/self/maps", "utf8").split("\n")) {
    const m = MEMFD.exec(l);
    if (m) out.add(m[1]);
  }
  return out;
}

/** Session memfds this process holds open (not only mapped). */
export function heldSessionFds(): Set<string> {
  const out = new Set<string>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const m = MEMFD.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) out.add(m[1]);
    } catch { /* closed meanwhile */ }
  }
  return out;
}

/** True while session object `name` (`/verbus-…` or `verbus-…`) is mapped or open here. */
export function sessionObjectLive(name: string): boolean {
  return liveSessionObjects().has(name.replace(/^\//, ""));
}

/**
 * The notify pages process `pid` holds open (`memfd:verbus-<pid>-notify`): one at most, the shm
 * readiness source of the whole process.
 */
export function heldNotifyPages(pid: number): string[] {
  const out: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.includes(`memfd:verbus-${pid}-notify`)) out.push(`${pid}:${fd}`);
    } catch { /* closed meanwhile */ }
  }
  return out;
}
