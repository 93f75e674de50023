/**
 * The handles of the client's async API (`submit` / `poll` / `wait`): a number per started call,
 * mapped to its promise and, once settled, its result or error.
 *
 * Threading: one table per client, on its JS thread.
 * @module
 */
import { VerbusError } from "../errors.ts";
import type { ClientCallResult } from "./connect_options.ts";

interface Entry {
  promise: Promise<ClientCallResult>;
  result?: ClientCallResult;
  error?: unknown;
}

/** See the module documentation. */
export class CallHandles {
  readonly #entries = new Map<number, Entry>();
  #next = 1;

  /** Keeps `promise` under a new handle and returns it. */
  add(promise: Promise<ClientCallResult>): number {
    const h = this.#next++;
    const entry: Entry = { promise };
    promise.then((r) => (entry.result = r), (e) => (entry.error = e));
    this.#entries.set(h, entry);
    return h;
  }

  /** The result of a finished call (the handle is then released), or undefined while running. Throws its error. */
  poll(handle: number): ClientCallResult | undefined {
    const e = this.#get(handle);
    if (e.error !== undefined) {
      this.#entries.delete(handle);
      throw e.error;
    }
    if (e.result === undefined) return undefined;
    this.#entries.delete(handle);
    return e.result;
  }

  /** Waits for the call behind `handle`; releases the handle. */
  async wait(handle: number): Promise<ClientCallResult> {
    const e = this.#get(handle);
    try {
      return await e.promise;
    } finally {
      this.#entries.delete(handle);
    }
  }

  #get(handle: number): Entry {
    const e = this.#entries.get(handle);
    if (!e) throw new VerbusError("NOT_FOUND", `no call with handle ${handle}`);
    return e;
  }
}
