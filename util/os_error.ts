/**
 * The operating system's cause of a failed socket call, read the same way on both runtimes:
 * Deno throws `ConnectionRefused: Connection refused (os error 111)` with `code` "ECONNREFUSED";
 * Bun throws `Error: Failed to connect` with `code` "ECONNREFUSED", `errno` -111 (or 98 for
 * listen) and `syscall` "connect". Both become `ECONNREFUSED (errno 111)` plus the runtime's own
 * words, so a message names the errno's name and number whichever runtime made it. Pure; any thread.
 * @module
 */
import { errnoName } from "../errors.ts";

/** What the runtime said about an OS-level failure. */
export interface OsErrorInfo {
  /** The errno name (`ECONNREFUSED`) or resolver code (`ENOTFOUND`), when the runtime gave one. */
  readonly code?: string;
  /** The errno number (positive), when known: from the runtime or from the name on Linux. */
  readonly errno?: number;
  /** The system call that failed (`connect`, `listen`, `getaddrinfo`), when the runtime said. */
  readonly syscall?: string;
  /** The runtime's own message, without a trailing `(os error N)`. */
  readonly detail: string;
}

/** The errno number of a Linux errno name verbus knows (`ECONNREFUSED` → 111), else undefined. */
function errnoOf(name: string): number | undefined {
  if (!name.startsWith("E")) return undefined;
  for (let n = 1; n < 200; n++) if (errnoName(n) === name) return n;
  return undefined;
}

/** Reads code, errno and syscall off `e` (any thrown value); never throws. */
export function osErrorInfo(e: unknown): OsErrorInfo {
  // deno-lint-ignore no-explicit-any
  const x = (typeof e === "object" && e !== null ? e : {}) as any;
  const message = e instanceof Error ? e.message : String(e);
  const os = /\s*\(os error (\d+)\)\s*$/.exec(message);
  const code = typeof x.code === "string" && /^E[A-Z0-9]+$/.test(x.code) ? x.code : undefined;
  const syscall = typeof x.syscall === "string" ? x.syscall : undefined;
  let errno: number | undefined = os ? Number(os[1]) : undefined;
  // A name verbus knows is authoritative (Bun's errno is negative on some paths); a resolver's
  // errno (getaddrinfo's EAI_* values) is not an errno at all.
  errno ??= code ? errnoOf(code) : undefined;
  if (errno === undefined && typeof x.errno === "number" && syscall !== "getaddrinfo") {
    errno = Math.abs(x.errno);
  }
  const detail = os ? message.slice(0, os.index) : message;
  const named = code ??
    (errno !== undefined && errnoOf(errnoName(errno)) ? errnoName(errno) : undefined);
  return {
    ...(named ? { code: named } : {}),
    ...(errno !== undefined ? { errno } : {}),
    ...(syscall ? { syscall } : {}),
    detail,
  };
}

/**
 * One line naming the cause of `e`: `ECONNREFUSED (errno 111): Connection refused` on Deno,
 * `ECONNREFUSED (errno 111): Failed to connect` on Bun, the bare message when the runtime gave
 * no code.
 */
export function describeOsError(e: unknown): string {
  const i = osErrorInfo(e);
  if (!i.code) {
    return e instanceof Error && e.name !== "Error" ? `${e.name}: ${i.detail}` : i.detail;
  }
  const num = i.errno !== undefined ? ` (errno ${i.errno})` : "";
  return `${i.code}${num}: ${i.detail}`;
}

/** The fields of {@link osErrorInfo} that are set, for an error's context. */
export function osErrorContext(e: unknown): Record<string, unknown> {
  const { detail: _detail, ...rest } = osErrorInfo(e);
  return rest;
}
