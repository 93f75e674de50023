/**
 * The server's sweep for connection timeouts: while connections are open and a timeout is set, a
 * timer runs a few times per shortest timeout (and at least every second) and asks each
 * connection whether its header, idle or stall timeout passed
 * ({@link ServerConnection.expired}, which closes it). When the connection budget is tight the
 * idle timeout shrinks ({@link idleTimeoutFor}); running out of file descriptors counts as being
 * at the cap for a while. Counts what it closed, for the server's stats.
 *
 * Threading: the server's JS thread.
 * @module
 */
import type { ConnectionLimits, ServerConnection } from "../tcp/server_connection.ts";
import { idleTimeoutFor } from "./idle_timeout.ts";

/** The sweep runs this many times per shortest timeout (and at least every second). */
const SWEEPS_PER_TIMEOUT = 4;
/** After accepting paused for lack of descriptors, the budget counts as tight this long. */
const FD_SHORT_MS = 10_000;

/** The timeout sweep over one server's connections. */
export class TimeoutSweep {
  /** Connections closed with a frame incomplete after `headerTimeoutMs`. */
  headerTimeouts = 0;
  /** Connections closed after `idleTimeoutMs` idle. */
  idleTimeouts = 0;
  /** Connections closed after not reading their answers for `stallTimeoutMs`. */
  stallTimeouts = 0;
  readonly #limits: ConnectionLimits;
  readonly #maxConnections: number;
  /** The server's open connections (read, never changed here). */
  readonly #connections: ReadonlySet<ServerConnection>;
  /** Between sweeps, in ms (0: no timeout is set, the sweep never runs). */
  readonly #everyMs: number;
  #timer: ReturnType<typeof setInterval> | undefined = undefined;
  /** Until when the descriptors count as short (accepting paused): idle ones are shed sooner. */
  #fdShortUntil = 0;

  /** Sweeps `connections` (the server's own set) with `limits`, `maxConnections` being the cap. */
  constructor(
    limits: ConnectionLimits,
    maxConnections: number,
    connections: ReadonlySet<ServerConnection>,
  ) {
    this.#limits = limits;
    this.#maxConnections = maxConnections;
    this.#connections = connections;
    const shortest = Math.min(
      limits.headerTimeoutMs || Infinity,
      limits.idleTimeoutMs || Infinity,
      limits.stallTimeoutMs || Infinity,
    );
    this.#everyMs = shortest === Infinity
      ? 0
      : Math.max(10, Math.min(1000, Math.floor(shortest / SWEEPS_PER_TIMEOUT)));
  }

  /** A connection was added: the sweep runs (if a timeout is set and it was not running). */
  start(): void {
    if (this.#timer === undefined && this.#everyMs > 0) {
      this.#timer = setInterval(this.#sweep, this.#everyMs);
    }
  }

  /** No connection is left (or the server closes): the sweep stops. */
  stop(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Accepting paused for lack of descriptors: for a while, count as at the cap. */
  descriptorsShort(): void {
    this.#fdShortUntil = Date.now() + FD_SHORT_MS;
  }

  /** Closes the connections whose header, idle or stall timeout passed. */
  readonly #sweep = (): void => {
    const now = Date.now();
    const base = this.#limits;
    // Out of descriptors counts as at the cap, whatever `maxConnections` says.
    const open = now < this.#fdShortUntil ? this.#maxConnections : this.#connections.size;
    const idle = idleTimeoutFor(base.idleTimeoutMs, open, this.#maxConnections);
    const limits = idle === base.idleTimeoutMs ? base : { ...base, idleTimeoutMs: idle };
    for (const c of this.#connections) {
      const t = c.expired(now, limits);
      if (t === "header") this.headerTimeouts++;
      else if (t === "idle") this.idleTimeouts++;
      else if (t === "stall") this.stallTimeouts++;
    }
  };
}
