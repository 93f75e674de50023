/**
 * Loads and stores of the u32 words a peer shares with us (the state words of the request and
 * response rings, doorbells, notify counters) with the ordering the data path needs — an
 * acquire load, a release store — at the cost each runtime makes cheapest. Used by the shm
 * fabric and by the sessions' ring scans (whatever the fabric: a word an RDMA NIC wrote is read
 * by the same instruction either way on x86-64).
 *
 * Why not always `Atomics`: on Deno (V8) `Atomics.load` and `Atomics.store` are calls into a
 * runtime builtin, never inlined (a `perf record` of a loop of either lands in the `deno`
 * binary: ~8–10 ns each, against ~1 ns for a plain typed-array access), and the data path makes
 * several per call: the server's scan of its request ring, the client's look at each response
 * slot, every state word published. In two-process shm runs at 32 in flight, samples in that
 * builtin were 12 % of the client's and 20 % of the server's CPU (`bench/results/cpu-per-call.md`).
 *
 * Why a plain access is enough where it is used: on x86-64 the hardware keeps loads in order
 * with loads and stores in order with stores (TSO), so a plain load is an acquire and a plain
 * store a release; and V8 keeps typed-array loads and stores in program order (they are on its
 * effect chain; it never moves a store across a call such as the `set` that wrote the body
 * before the state word). What a plain access does not give is store→load order (a store
 * followed by a load of another word may be seen the other way round): the protocols that need
 * it — the sleep and nap flags against the doorbell — keep `Atomics` (and the announcement's
 * locked add). Elsewhere (Bun, whose JIT inlines `Atomics`; or a CPU with a weaker memory model,
 * such as arm64) these are `Atomics.load` / `Atomics.store` as before.
 *
 * Never use these in a loop that waits on one word without a call in between (a compiler may
 * keep a plain load out of such a loop); every caller here reads a word once per poll.
 *
 * Threading: pure functions over the caller's views; any thread.
 * @module
 */
import { RUNTIME } from "../util/runtime.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** True where plain accesses stand for acquire loads and release stores (V8 on x86-64). */
export const PLAIN_ORDERED_WORDS: boolean = RUNTIME === "deno" &&
  g.Deno?.build?.arch === "x86_64";

/** The word `i` of `words`, ordered before every later load (acquire). */
export const loadAcquire: (words: Int32Array, i: number) => number = PLAIN_ORDERED_WORDS
  ? (words, i) => words[i]
  : (words, i) => Atomics.load(words, i);

/** Stores `value` into word `i` of `words`, ordered after every earlier store (release). */
export const storeRelease: (words: Int32Array, i: number, value: number) => void =
  PLAIN_ORDERED_WORDS
    ? (words, i, value) => {
      words[i] = value;
    }
    : (words, i, value) => {
      Atomics.store(words, i, value);
    };
