/**
 * Lends the large requests of borrowing handlers ({@link borrowsRequest}) reused buffers: a server
 * session copies such a request out of its region into a buffer of a {@link BufferPool} shared by
 * the host's sessions and gives the buffer back once the call is answered, so a steady stream of
 * large requests (BULK) reuses the same few buffers instead of making a fresh `ArrayBuffer` per
 * call (on Bun that garbage grew a server to gigabytes before JSC collected it). Past the pool's
 * byte budget, or for a handler that owns its request, the session copies as before.
 *
 * Ownership: a lent buffer is the handler's until its answer is written (`giveBack`); a session
 * that closes with calls still running `forgetAll`s: those handlers keep theirs and the pool stops
 * counting them. Threading: the server's JS thread.
 * @module
 */
import { BufferPool } from "../../../util/buffer_pool.ts";
import type { Dispatcher } from "../../protocol/dispatch.ts";

/** Requests smaller than this are copied as before (small copies are cheap and pooled). */
export const LEND_MIN_BYTES = 4096;

/** The pool and budget the sessions of one host share. */
export interface LendingPool {
  readonly pool: BufferPool;
  /** Most bytes the pool holds (lent plus free). */
  readonly budget: number;
}

/** Makes the shared pool of a host: `budget` bytes at most, all of them kept for reuse. */
export function lendingPool(budget: number): LendingPool {
  return { pool: new BufferPool(budget), budget };
}

/** One session's lender (see the module documentation). */
export class RequestLender {
  readonly #dispatcher: Dispatcher;
  readonly #shared: LendingPool;
  /** Per method index: 1 = borrows, 0 = owns, undefined = not asked yet. */
  readonly #borrows: (0 | 1 | undefined)[] = [];
  /** Lent buffers by ring slot. */
  readonly #lent: (Uint8Array | undefined)[] = [];
  #lentCount = 0;
  /** Requests served in a lent buffer (tests, stats). */
  lends = 0;

  /** `shared`: the host's pool (default: a private one of 8 MiB). */
  constructor(dispatcher: Dispatcher, shared: LendingPool = lendingPool(8 * 1024 * 1024)) {
    this.#dispatcher = dispatcher;
    this.#shared = shared;
  }

  /**
   * A lent buffer holding `src[off, off + len)` for the call in ring slot `slot`, or `undefined`
   * (the caller copies) when the request is small, its handler owns its requests, or the pool is
   * at its budget.
   */
  lend(
    slot: number,
    method: number,
    service: string,
    name: string,
    src: Uint8Array,
    off: number,
    len: number,
  ): Uint8Array | undefined {
    if (len < LEND_MIN_BYTES) return undefined;
    let b = this.#borrows[method];
    if (b === undefined) {
      b = this.#borrows[method] = this.#dispatcher.borrows(service, name) ? 1 : 0;
    }
    if (b === 0) return undefined;
    const buf = this.#shared.pool.acquire(len, this.#shared.budget);
    if (buf === undefined) return undefined;
    buf.set(src.subarray(off, off + len));
    this.#lent[slot] = buf;
    this.#lentCount++;
    this.lends++;
    return buf;
  }

  /** The call in `slot` was answered: its lent buffer (if any) goes back to the pool. */
  giveBack(slot: number): void {
    const buf = this.#lent[slot];
    if (buf === undefined) return;
    this.#lent[slot] = undefined;
    this.#lentCount--;
    this.#shared.pool.release(buf);
  }

  /** The session closed: buffers still lent stay with their handlers, uncounted. */
  forgetAll(): void {
    for (const buf of this.#lent) if (buf !== undefined) this.#shared.pool.forget(buf);
    this.#lent.length = 0;
    this.#lentCount = 0;
  }

  /** Buffers lent now. */
  get lentCount(): number {
    return this.#lentCount;
  }
}
