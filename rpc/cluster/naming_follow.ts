/**
 * What the naming services share, written once: their common options, the list rules (one entry
 * per address, equality of two lists), and {@link follow}, the loop that asks a source again and
 * again, tells a watcher only what changed, reports a failure once, backs off, and stops — timer,
 * question in flight and all — when its stop function is called.
 *
 * Threading: the JS thread that created the service; every callback runs on it.
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../../errors.ts";
import { parseOptions } from "../../util/options.ts";
import type { NamingOptions, NamingWatcher, ServerNode } from "./naming.ts";

/** brpc's `-ns_access_interval`: how often a polling service asks again, ms. */
export const DEFAULT_POLL_MS = 5_000;
/** How long one question to a remote naming service may take, ms. */
export const DEFAULT_TIMEOUT_MS = 5_000;

/** {@link NamingOptions} checked, with their defaults. */
export interface CommonNamingOptions {
  pollMs: number;
  timeoutMs: number;
  log: (line: string) => void;
}

const commonSchema = z.looseObject({
  pollMs: z.number().int().min(1).max(86_400_000).optional(),
  timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  log: z.custom<(line: string) => void>((v) => typeof v === "function", {
    message: "expected a function",
  }).optional(),
});

/**
 * The common options of `options` (other keys are left to the service that owns them, since
 * one options object may serve every scheme). Throws INVALID_OPTIONS naming the bad field.
 */
export function commonOptions(
  options: NamingOptions,
  what: string,
  defaultPollMs = DEFAULT_POLL_MS,
): CommonNamingOptions {
  const o = parseOptions(commonSchema, options ?? {}, what);
  return {
    pollMs: o.pollMs ?? defaultPollMs,
    timeoutMs: o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    log: o.log ?? (() => {}),
  };
}

/**
 * `servers` with one entry per address, the first kept (the address is the key of a server
 * everywhere; brpc dedups the same way, on address and tag). A new array; the input is unchanged.
 */
export function uniqueServers(servers: readonly ServerNode[]): ServerNode[] {
  const seen = new Set<string>();
  const out: ServerNode[] = [];
  for (const s of servers) {
    if (seen.has(s.address)) continue;
    seen.add(s.address);
    out.push(s);
  }
  return out;
}

/** True when both lists hold the same servers (address, tag, weight) in the same order. */
export function sameServers(a: readonly ServerNode[], b: readonly ServerNode[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i].address !== b[i].address || a[i].tag !== b[i].tag || a[i].weight !== b[i].weight) {
      return false;
    }
  }
  return true;
}

/** `error` as a VerbusError: itself, or `code` with `what` and its text (the cause kept). */
export function asVerbusError(
  error: unknown,
  code: VerbusError["code"],
  what: string,
): VerbusError {
  if (error instanceof VerbusError) return error;
  const text = error instanceof Error ? error.message : String(error);
  return new VerbusError(code, `${what}: ${text}`, { cause: error });
}

/**
 * What follows `scheme://` in a naming URL, as written: brpc's URLs are not WHATWG URLs
 * (`file://conf/list` is a relative path, `list://a:1 tag` has spaces), so a string is cut,
 * not parsed; a URL object is taken back to its text first. Throws INVALID_ARGUMENT when the
 * scheme differs.
 */
export function afterScheme(url: URL | string, scheme: string): string {
  const text = typeof url === "string" ? url : decodeURIComponent(url.href);
  const prefix = `${scheme}://`;
  if (text.slice(0, prefix.length).toLowerCase() !== prefix) {
    throw new VerbusError("INVALID_ARGUMENT", `naming service "${text}": expected ${prefix}…`);
  }
  return text.slice(prefix.length);
}

/** One answer of a source to {@link follow}. */
export interface Round {
  /** The whole list, or undefined when the source said nothing new (consul's same index). */
  servers?: ServerNode[];
  /** How long to wait before asking again, ms. */
  nextMs: number;
}

/** What {@link follow} needs of a source. */
export interface FollowPlan {
  /** What is followed, for errors and the log (`consul://web`). */
  what: string;
  /**
   * Asks once. `signal` aborts when the follow stops: the question must then release its socket
   * or timer at once. Throws on failure (any error; non-VerbusErrors become CONNECT_FAILED).
   */
  ask(signal: AbortSignal): Promise<Round>;
  /** How long to wait after the `failures`-th failure in a row, ms. */
  retryMs(failures: number): number;
  /** Where failures and misbehaving watchers are reported. */
  log: (line: string) => void;
}

/** A running {@link follow}. */
export interface Following {
  /** Stops for good: clears the timer, aborts the question in flight. Safe twice. */
  stop(): void;
  /** Asks now instead of at the end of the wait (a file watcher saw a change). */
  wake(): void;
}

/**
 * Follows a source for one watcher: asks at once, then again after each answer's `nextMs` (or
 * the plan's `retryMs` after a failure). `onServers` gets the first list and then only lists that
 * differ from the last one given; `onError` gets a failure once — not again while the same
 * failure repeats, until a success or a different failure — and the last list stays in force.
 * Nothing runs after `stop()`: no callback, no timer, no question.
 */
export function follow(plan: FollowPlan, watcher: NamingWatcher): Following {
  const abort = new AbortController();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let asking = false;
  let wakeWhileAsking = false;
  let last: ServerNode[] | undefined;
  let failures = 0;
  let lastFailure = "";

  const tell = (fn: () => void) => {
    try {
      fn();
    } catch (e) {
      // A watcher that throws must not end the follow: the next change still has to reach it.
      plan.log(`${plan.what}: watcher threw: ${e instanceof Error ? e.message : String(e)}`);
    }
  };
  const schedule = (ms: number) => {
    if (stopped) return;
    if (wakeWhileAsking) ms = 0;
    wakeWhileAsking = false;
    timer = setTimeout(round, Math.max(0, ms));
  };
  async function round(): Promise<void> {
    timer = undefined;
    if (stopped) return;
    asking = true;
    let next: number;
    try {
      const answer = await plan.ask(abort.signal);
      if (stopped) return;
      failures = 0;
      lastFailure = "";
      const servers = answer.servers;
      if (servers !== undefined && (last === undefined || !sameServers(last, servers))) {
        last = servers;
        tell(() => watcher.onServers(servers));
      }
      next = answer.nextMs;
    } catch (e) {
      if (stopped) return;
      failures++;
      const error = asVerbusError(e, "CONNECT_FAILED", plan.what);
      const key = `${error.code} ${error.message}`;
      if (key !== lastFailure) {
        lastFailure = key;
        plan.log(`${plan.what}: ${error.message} (keeping the last list)`);
        if (watcher.onError) tell(() => watcher.onError!(error));
      }
      next = plan.retryMs(failures);
    } finally {
      asking = false;
    }
    schedule(next);
  }
  timer = setTimeout(round, 0);
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      abort.abort(new VerbusError("CLOSED", `${plan.what}: watch stopped`));
    },
    wake() {
      if (stopped) return;
      if (asking) {
        wakeWhileAsking = true;
      } else if (timer !== undefined) {
        clearTimeout(timer);
        timer = setTimeout(round, 0);
      }
    },
  };
}

/**
 * The watches of one service, so that `close()` can stop them all; `watch` and `resolve` after
 * `close()` throw CLOSED.
 */
export class WatchSet {
  #closed = false;
  readonly #stops = new Set<() => void>();
  readonly #what: string;

  constructor(what: string) {
    this.#what = what;
  }

  /** Throws CLOSED once the service was closed. */
  check(): void {
    if (this.#closed) throw new VerbusError("CLOSED", `${this.#what}: naming service closed`);
  }

  /** Keeps `stop` until it is called or the set closes; returns the stop to hand out. */
  add(stop: () => void): () => void {
    this.check();
    let done = false;
    const once = () => {
      if (done) return;
      done = true;
      this.#stops.delete(once);
      stop();
    };
    this.#stops.add(once);
    return once;
  }

  /** Stops every watch. Safe twice. */
  close(): void {
    this.#closed = true;
    for (const stop of [...this.#stops]) stop();
  }
}

/**
 * Runs `fn` with a signal that aborts after `timeoutMs` (as TIMEOUT naming `what`) or when
 * `outer` aborts; the timer is cleared either way.
 */
export async function withTimeout<T>(
  what: string,
  timeoutMs: number,
  outer: AbortSignal | undefined,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const ac = new AbortController();
  const timer = setTimeout(
    () => ac.abort(new VerbusError("TIMEOUT", `${what}: no answer in ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onOuter = () => ac.abort(outer!.reason);
  if (outer?.aborted) onOuter();
  else outer?.addEventListener("abort", onOuter, { once: true });
  try {
    return await new Promise<T>((resolve, reject) => {
      // The question may not listen to its signal (getaddrinfo cannot be cancelled): the caller
      // is answered at the abort all the same, and the late answer is dropped.
      if (ac.signal.aborted) reject(ac.signal.reason);
      ac.signal.addEventListener("abort", () => reject(ac.signal.reason), { once: true });
      fn(ac.signal).then(resolve, reject);
    });
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuter);
  }
}
