/**
 * One error hierarchy for all of verbus. Every error thrown by library code is a
 * {@link VerbusError} with a machine-readable {@link VerbusErrorCode}; native failures are
 * {@link NativeError}s that name the C function, the errno and the context of the call.
 * Library code never exits the process.
 *
 * @module
 */

/** Every error code verbus can raise. Extend this union (and nothing else) when adding a code. */
export type VerbusErrorCode =
  | "LIBRARY_NOT_FOUND" // a native library could not be loaded from any candidate path
  | "SYMBOL_MISSING" // a required symbol is absent from a loaded library
  | "LAYOUT_MISMATCH" // a TypeScript offset constant disagrees with the helper's layout table
  | "NATIVE_CALL" // a native call failed (see NativeError.fn / errno)
  | "UNSUPPORTED_RUNTIME" // neither Deno nor Bun
  | "INVALID_OPTIONS" // an options object failed its zod schema
  | "NO_DEVICE" // no RDMA / URMA device present or no kernel support
  | "CLOSED" // the object was used after close()
  | "PROTOCOL" // a peer sent bytes that break the wire protocol
  | "CONNECTION_CLOSED" // the transport connection went away
  | "CONNECT_FAILED" // could not connect to the peer
  | "UNAVAILABLE" // no server can take the call now (a cluster with none usable, or recovering)
  | "TIMEOUT" // a deadline passed
  | "RPC_ERROR" // the server answered with a non-zero error_code
  | "HANDSHAKE" // the fabric handshake failed
  | "FABRIC" // a fabric operation failed
  | "BOUNDS" // an offset / length / index from a peer is out of bounds
  | "FULL" // a ring or pool has no room (only where throwing is the API's contract)
  | "NOT_FOUND" // a named thing (key, object, service) does not exist
  | "INVALID_ARGUMENT" // a caller-supplied value is malformed (bad key, bad size suffix, bad name)
  | "INTEGRITY" // transferred data failed its check (hash or total length mismatch)
  | "STREAM" // a stream was reset, refused, overran its bounds or its connection ended
  | "LISTEN_FAILED" // could not listen on an address (in use, no permission, bad host)
  | "UNSAFE_CACHE"; // the per-user cache is not this user's own (owner, symlink, writable by others)

/** Base class of every verbus error. `code` says what kind of failure it is. */
export class VerbusError extends Error {
  /** What kind of failure this is. */
  readonly code: VerbusErrorCode;
  /** Free-form context (peer, session, sizes...) for logs; never needed to react to the error. */
  readonly context: Readonly<Record<string, unknown>>;

  constructor(
    code: VerbusErrorCode,
    message: string,
    options: { cause?: unknown; context?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.context = Object.freeze({ ...(options.context ?? {}) });
  }
}

/** Names of the errno values verbus reports (Linux x86_64). */
const ERRNO_NAMES: Readonly<Record<number, string>> = {
  1: "EPERM",
  2: "ENOENT",
  3: "ESRCH",
  4: "EINTR",
  5: "EIO",
  6: "ENXIO",
  9: "EBADF",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  14: "EFAULT",
  16: "EBUSY",
  17: "EEXIST",
  19: "ENODEV",
  22: "EINVAL",
  24: "EMFILE",
  28: "ENOSPC",
  32: "EPIPE",
  38: "ENOSYS",
  61: "ENODATA",
  95: "EOPNOTSUPP",
  98: "EADDRINUSE",
  99: "EADDRNOTAVAIL",
  101: "ENETUNREACH",
  103: "ECONNABORTED",
  104: "ECONNRESET",
  110: "ETIMEDOUT",
  111: "ECONNREFUSED",
  113: "EHOSTUNREACH",
};

/** The symbolic name of an errno value, e.g. `errnoName(38) === "ENOSYS"`. */
export function errnoName(errno: number): string {
  return ERRNO_NAMES[errno] ?? `errno ${errno}`;
}

/** A native call failed. Names the C function, its errno and what verbus was doing. */
export class NativeError extends VerbusError {
  /** The C function that failed, e.g. `ibv_create_qp`. */
  readonly fn: string;
  /** The errno (positive) the call reported, or 0 if it reported none. */
  readonly errno: number;

  constructor(fn: string, errno: number, what: string, context: Record<string, unknown> = {}) {
    super(
      "NATIVE_CALL",
      `${fn} failed${errno ? ` with ${errnoName(errno)} (${errno})` : ""}: ${what}`,
      { context: { ...context, fn, errno } },
    );
    this.fn = fn;
    this.errno = errno;
  }
}

/** One place a library loader looked, and why that place did not work. */
export interface LoadAttempt {
  /**
   * Where the path came from: env override, bundled build, the copy a compiled binary carries
   * (written to the per-user cache), or system soname.
   */
  readonly source: "env" | "bundled" | "embedded" | "system";
  /** The path or soname passed to dlopen. */
  readonly path: string;
  /** Why it failed (dlopen's message, "file not found", ...). */
  readonly reason: string;
}

/** No candidate path of a native library could be loaded. Lists every path tried and why. */
export class LibraryLoadError extends VerbusError {
  /** Logical library name: `libibverbs`, `librdmacm`, `liburma`, `libc`, `helper`. */
  readonly library: string;
  /** Every attempt in order. */
  readonly attempts: readonly LoadAttempt[];

  /** `hint`: what to do about it (e.g. how to build the helper), appended to the message. */
  constructor(library: string, attempts: readonly LoadAttempt[], hint?: string) {
    const tried = attempts.map((a) => `  ${a.source}: ${a.path} (${a.reason})`).join("\n");
    super("LIBRARY_NOT_FOUND", `no ${library} found: tried\n${tried}${hint ? `\n${hint}` : ""}`, {
      context: { library },
    });
    this.library = library;
    this.attempts = attempts;
  }
}

/** A TypeScript struct offset disagrees with what the C compiler laid out. */
export class LayoutMismatchError extends VerbusError {
  constructor(readonly mismatches: readonly string[]) {
    super(
      "LAYOUT_MISMATCH",
      `struct layout mismatch between TypeScript and the C helper (refusing to run):\n  ${
        mismatches.join("\n  ")
      }`,
    );
  }
}

/** An object was used after its close(). */
export class ClosedError extends VerbusError {
  constructor(what: string) {
    super("CLOSED", `${what} is closed`);
  }
}

/** A peer sent bytes that break the wire protocol. The message names exactly what was wrong. */
export class ProtocolError extends VerbusError {
  constructor(message: string, context: Record<string, unknown> = {}) {
    super("PROTOCOL", message, { context });
  }
}

/** The transport connection went away: the peer closed or reset it, or it was closed locally. */
export class ConnectionClosedError extends VerbusError {
  constructor(
    message: string,
    options: { cause?: unknown; context?: Record<string, unknown> } = {},
  ) {
    super("CONNECTION_CLOSED", message, options);
  }
}

/** Could not connect to a peer (refused, unreachable, name not resolved, connect timeout). */
export class ConnectFailedError extends VerbusError {
  constructor(
    message: string,
    options: { cause?: unknown; context?: Record<string, unknown> } = {},
  ) {
    super("CONNECT_FAILED", message, options);
  }
}

/** A deadline passed before the operation completed. */
export class TimeoutError extends VerbusError {
  constructor(message: string, context: Record<string, unknown> = {}) {
    super("TIMEOUT", message, { context });
  }
}
