/**
 * An end notice: the callbacks to run once when something ends (a session, a connection), and
 * an `AbortSignal` for it made only if someone asks for one.
 *
 * Why not just an `AbortController`: a controller and its signal with listeners are DOM objects
 * the JS engine revisits in every garbage collection, young or full (on Bun each signal with a
 * listener is an opaque root of every collection). A Bun server with 10,000 idle fabric sessions
 * had two per session: 20,000 of its 50,000 opaque roots. Without them its idle CPU in the 10 s
 * after a burst of calls went from 1.6–2.1 % to 1.0–1.1 % (`bench/scale/idle_profile.ts`, two
 * alternating rounds, load ~5); in a bare Bun process (`bench/profile/bun_gc_idle.ts`) 40,000
 * such signals made an empty young collection take 5–8 ms instead of 0.4 ms. Internal listeners
 * use {@link EndNotice.onEnd}; the signal exists for handlers that read `ctx.signal`.
 *
 * One JS thread (the owner's).
 * @module
 */

/** See the module documentation. */
export class EndNotice {
  /** Callbacks still to run; null once ended. */
  #listeners: (() => void)[] | null = [];
  #abort: AbortController | null = null;
  #reason: unknown = undefined;

  /** True once {@link end} ran. */
  get ended(): boolean {
    return this.#listeners === null;
  }

  /** True while something waits for the end: a listener, or a signal someone asked for. */
  get watched(): boolean {
    return this.#abort !== null || (this.#listeners?.length ?? 0) > 0;
  }

  /**
   * Aborted at the end with the reason given to {@link end} (made on first use; already aborted
   * if the end has passed).
   */
  get signal(): AbortSignal {
    if (this.#abort === null) {
      this.#abort = new AbortController();
      if (this.ended) this.#abort.abort(this.#reason);
    }
    return this.#abort.signal;
  }

  /**
   * Runs `fn` once at the end (at once if it has passed); returns the function that removes it
   * (safe twice, and after the end).
   */
  onEnd(fn: () => void): () => void {
    const list = this.#listeners;
    if (list === null) {
      fn();
      return () => {};
    }
    list.push(fn);
    return () => {
      const i = list.indexOf(fn);
      if (i >= 0) list.splice(i, 1);
    };
  }

  /**
   * Aborts the signal (if made) with `reason` (undefined: the default AbortError), then runs the
   * callbacks in the order they came. Safe twice (the first reason stays).
   */
  end(reason?: unknown): void {
    const list = this.#listeners;
    if (list === null) return;
    this.#listeners = null;
    this.#reason = reason;
    this.#abort?.abort(reason);
    for (const fn of list) fn();
  }
}
