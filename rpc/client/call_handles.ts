/**
 * The handles of the async call API (`submit` → handle → `poll` / `wait`), shared by
 * {@link Client} and the agent client: a handle names one call's promise until its result is
 * taken once.
 *
 * Threading: the JS thread of the client that owns it.
 * @module
 */
import { VerbusError } from "../../errors.ts";

interface Entry<R> {
  promise: Promise<R>;
  result?: R;
  error?: unknown;
}

/** Calls started with `submit`, by handle. */
export class CallHandles<R> {
  readonly #handles = new Map<number, Entry<R>>();
  #next = 1;

  /** Registers a started call; returns its handle. */
  add(promise: Promise<R>): number {
    const h = this.#next++;
    const entry: Entry<R> = { promise };
    promise.then((r) => (entry.result = r), (e) => (entry.error = e));
    this.#handles.set(h, entry);
    return h;
  }

  /** The result of a finished call (the handle is then released), or undefined while running. Throws its error. */
  poll(handle: number): R | undefined {
    const e = this.#get(handle);
    if (e.error !== undefined) {
      this.#handles.delete(handle);
      throw e.error;
    }
    if (e.result === undefined) return undefined;
    this.#handles.delete(handle);
    return e.result;
  }

  /** Waits for the call; releases the handle. */
  async wait(handle: number): Promise<R> {
    const e = this.#get(handle);
    try {
      return await e.promise;
    } finally {
      this.#handles.delete(handle);
    }
  }

  #get(handle: number): Entry<R> {
    const e = this.#handles.get(handle);
    if (!e) throw new VerbusError("NOT_FOUND", `no call with handle ${handle}`);
    return e;
  }
}
