/**
 * The process's file-descriptor budget, as the kernel states it: the soft `RLIMIT_NOFILE` (read
 * from `/proc/self/limits`, which is the kernel's own statement of the limits and needs no FFI)
 * and the descriptors open now (`/proc/self/fd`). A server sizes its connection cap from these so
 * that `accept` never meets EMFILE under the default options: every connection is a descriptor,
 * and fabric sessions (shm, verbs, URMA) take descriptors of their own.
 *
 * Threading: any thread; each call reads `/proc` (a few µs to a fraction of a ms: not per call).
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";

/** The largest connection cap a default ever gives. */
export const MAX_DEFAULT_CONNECTIONS = 16_384;
/** The smallest connection cap a default ever gives (a tiny limit still serves someone). */
export const MIN_DEFAULT_CONNECTIONS = 16;
/**
 * The share of the free descriptors the connection cap takes by default; the rest is kept for
 * what the connections bring along (fabric sessions' memfds, eventfds, verbs and URMA contexts)
 * and for the process's own files.
 */
export const CONNECTION_SHARE = 0.75;

/** The soft limit on open files (`Max open files` of `/proc/self/limits`); null if unknown. */
export function softFdLimit(): number | null {
  try {
    const m = /^Max open files\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    if (!m || m[1] === "unlimited") return null;
    const n = Number(m[1]);
    return Number.isSafeInteger(n) && n > 0 ? n : null;
  } catch {
    return null; // no /proc (not Linux, or a sandbox without it)
  }
}

/** Descriptors this process has open now (entries of `/proc/self/fd`); null if unknown. */
export function openFdCount(): number | null {
  try {
    // The listing's own descriptor is counted too: one more than before the call, harmlessly.
    return readdirSync("/proc/self/fd").length;
  } catch {
    return null;
  }
}

/** How a default connection cap was derived (for the log line that states it). */
export interface ConnectionBudget {
  /** The cap: connections open at once. */
  readonly maxConnections: number;
  /** The soft open-file limit it was derived from (null: unknown, the cap is the largest). */
  readonly fdLimit: number | null;
  /** Descriptors open when it was derived. */
  readonly fdsOpen: number | null;
}

/**
 * The default connection cap of a server started now: {@link CONNECTION_SHARE} of the
 * descriptors still free under the soft limit, within [{@link MIN_DEFAULT_CONNECTIONS},
 * {@link MAX_DEFAULT_CONNECTIONS}] (the largest when the limit is unknown or unlimited).
 */
export function connectionBudget(): ConnectionBudget {
  const fdLimit = softFdLimit();
  const fdsOpen = openFdCount();
  if (fdLimit === null) {
    return { maxConnections: MAX_DEFAULT_CONNECTIONS, fdLimit, fdsOpen };
  }
  const free = fdLimit - (fdsOpen ?? 0);
  const cap = Math.floor(free * CONNECTION_SHARE);
  return {
    maxConnections: Math.max(MIN_DEFAULT_CONNECTIONS, Math.min(MAX_DEFAULT_CONNECTIONS, cap)),
    fdLimit,
    fdsOpen,
  };
}
