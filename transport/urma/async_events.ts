/**
 * The asynchronous-event reader of a URMA context (one per context; the process has one hub
 * context per device, so one reader per process): it waits on the context's `async_fd`
 * (urma_context_t @20) off the JS thread (helper `vb_wait_fd`, a nonblocking FFI call, the way
 * the hub waits on its JFCE), then drains `urma_get_async_event` into one preallocated
 * 32-byte `urma_async_event_t`, acknowledges each event and hands it to whoever watches:
 * a jetty event (URMA_EVENT_JETTY_ERR, _LIMIT) to the endpoint that owns that jetty, a
 * context-wide one (JFC error, port down, device fatal, EID change) to every endpoint. The
 * endpoint fails with the event named; the session then falls back to TCP and re-negotiates
 * as for any fabric failure. The loop runs only while something watches, and each wait is long
 * ({@link ASYNC_WAIT_MS}, a {@link WakeableFdWait}): the last watcher leaving, or the context
 * closing (before `urma_delete_context` closes the fd waited on), ends it, so the loop stops at
 * once (a 200 ms wait woke every process with a URMA session five times a second). Control path.
 * @module
 */
import { URMA_CONTEXT_LEAD } from "../../ffi/layouts/urma.ts";
import { URMA_ASYNC_EVENT, URMA_EVENT_TYPES } from "../../ffi/layouts/urma_events.ts";
import { VerbusError } from "../../errors.ts";
import type { UrmaContext } from "./context.ts";
import type { Jetty } from "./jetty.ts";
import type { UrmaLib } from "./urma_lib.ts";
import { FD_READABLE, WakeableFdWait } from "../fd_wait.ts";

/** What a watcher is told: the event's name and what it concerned. */
export type AsyncEventHandler = (reason: string) => void;

/** Longest single wait on the async fd, ms (the last watcher leaving, or a close, ends it). */
export const ASYNC_WAIT_MS = 10_000;
/** The wait when no eventfd could be made (the loop then notices a close or an unwatch this late). */
const WAIT_NO_WAKE_MS = 200;
/** Events that concern one jetty (element = the jetty). */
const JETTY_EVENTS = new Set([4, 5]);
/** Events whose element is a port id or an EID index (PORT_ACTIVE, PORT_DOWN, EID_CHANGE). */
const PORT_EVENTS = new Set([7, 8, 10]);

/** The reader of one context's asynchronous events. */
export class UrmaAsyncEvents {
  static readonly #byContext = new Map<UrmaContext, UrmaAsyncEvents>();
  readonly #lib: UrmaLib;
  readonly #ctx: UrmaContext;
  readonly #fd: number;
  readonly #event = new Uint8Array(URMA_ASYNC_EVENT.$size);
  readonly #view = new DataView(this.#event.buffer);
  /** Watchers by jetty address. */
  readonly #jetties = new Map<number, AsyncEventHandler>();
  /** The loop's wait on the async fd (its eventfd is closed with the context). */
  readonly #wait: WakeableFdWait;
  #running = false;
  /** Events read and acknowledged (tests, doctor). */
  seen = 0;
  /** The last event, named (tests, logs). */
  last: string | null = null;

  private constructor(ctx: UrmaContext) {
    this.#lib = ctx.lib;
    this.#ctx = ctx;
    const lead = new DataView(
      ctx.lib.ffi.view(ctx.handle, URMA_CONTEXT_LEAD.async_fd as number + 4),
    );
    this.#fd = lead.getInt32(URMA_CONTEXT_LEAD.async_fd as number, true);
    this.#wait = new WakeableFdWait(ctx.lib.helper, ASYNC_WAIT_MS, WAIT_NO_WAKE_MS);
    ctx.whenClosing(() => {
      UrmaAsyncEvents.#byContext.delete(ctx);
      this.#wait.close((fd) => ctx.lib.libc.symbols.close(fd));
    });
  }

  /** The reader of `ctx` (null when the library has no async-event API or no async fd). */
  static of(ctx: UrmaContext): UrmaAsyncEvents | null {
    const s = ctx.lib.lib.symbols;
    if (!s.urma_get_async_event || !s.urma_ack_async_event) return null;
    let r = UrmaAsyncEvents.#byContext.get(ctx);
    if (!r) {
      r = new UrmaAsyncEvents(ctx);
      if (r.#fd < 0) return null;
      UrmaAsyncEvents.#byContext.set(ctx, r);
    }
    return r;
  }

  /**
   * Calls `handler` (once) when an event concerns `jetty` or its whole context; returns the
   * function that stops watching. Starts the reader if it is not running.
   */
  watch(jetty: Jetty, handler: AsyncEventHandler): () => void {
    const key = Number(this.#lib.ffi.address(jetty.handle));
    this.#jetties.set(key, handler);
    if (!this.#running) void this.#loop();
    return () => {
      if (this.#jetties.get(key) !== handler) return;
      this.#jetties.delete(key);
      if (this.#jetties.size === 0 && this.#running) this.#wait.wake();
    };
  }

  /** True while the loop waits on the async fd (tests). */
  get running(): boolean {
    return this.#running;
  }

  /** Waits the loop made (tests: an idle reader waits rarely). */
  get waits(): number {
    return this.#wait.waits;
  }

  async #loop(): Promise<void> {
    this.#running = true;
    try {
      while (this.#jetties.size > 0 && !this.#ctx.closed) {
        const rc = await this.#wait.wait(this.#fd);
        if (rc === FD_READABLE && !this.#ctx.closed) this.drain();
        else if (rc < 0) break; // the fd is gone: the context closed
        // (woken or timed out: the loop condition decides)
      }
    } finally {
      this.#running = false;
    }
  }

  /** Reads, dispatches and acknowledges every waiting event; returns how many. */
  drain(): number {
    const s = this.#lib.lib.symbols;
    let n = 0;
    while (s.urma_get_async_event!(this.#ctx.handle, this.#event) === 0) {
      n++;
      const type = this.#view.getUint32(URMA_ASYNC_EVENT.event_type, true);
      const element = Number(this.#view.getBigUint64(URMA_ASYNC_EVENT.element, true));
      const name = URMA_EVENT_TYPES[type] ?? `async event ${type}`;
      this.seen++;
      this.last = name;
      s.urma_ack_async_event!(this.#event);
      if (JETTY_EVENTS.has(type)) {
        const h = this.#jetties.get(element);
        this.#jetties.delete(element);
        h?.(`urma: ${name} on this session's jetty (urma_get_async_event)`);
      } else if (type !== 7 /* PORT_ACTIVE: good news */) {
        const all = [...this.#jetties.values()];
        this.#jetties.clear();
        const what = PORT_EVENTS.has(type) ? `port/EID ${element % 2 ** 32}` : "the context";
        for (const h of all) h(`urma: ${name} on ${what} (urma_get_async_event)`);
      }
    }
    return n;
  }

  /**
   * SIMULATOR ONLY: makes the simulated liburma raise async event `type` (a name of
   * URMA_EVENT_TYPES) on `jetty`'s context: a jetty event names the jetty
   * (URMA_EVENT_JETTY_ERR also puts it in the ERROR state), a port / EID event port 1.
   */
  static simInject(jetty: Jetty, type: (typeof URMA_EVENT_TYPES)[number]): void {
    const ctx = jetty.context;
    const fn = ctx.lib.lib.symbols.urma_sim_inject_async_event;
    if (!fn) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        "async events can be injected only into the simulated liburma",
      );
    }
    const code = URMA_EVENT_TYPES.indexOf(type);
    const element = PORT_EVENTS.has(code) ? ctx.lib.ffi.fromAddress(1) : jetty.handle;
    const rc = fn(ctx.handle, element, code);
    if (rc !== 0) {
      throw new VerbusError(
        "INVALID_ARGUMENT",
        `urma_sim_inject_async_event: ${rc} (${ctx.lib.lastError()})`,
      );
    }
  }
}
