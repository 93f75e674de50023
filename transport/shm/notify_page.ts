/**
 * The shm fabric's readiness source (`transport/readiness.ts`): one shared-memory page per
 * process, created on first use, on which peers announce which of this process's shm endpoints
 * have work. Each endpoint owns a token. A peer announces token t by counting up t's own counter
 * (a plain store: it is its one writer), then — for t ≥ {@link FLAT_TOKENS} — the counter of t's
 * group of 32 tokens and that of the group's group of 1,024 tokens, then the page's doorbell (a
 * futex word), and wakes the process only when it sleeps: a busy receiver costs the sender one
 * atomic add (three past the first 32 tokens) and no syscall. The receiver keeps a private copy
 * of every counter it has seen and writes nothing shared: it reads the counters of the first 32
 * tokens straight away, then the few top counters, descends only into groups whose counter moved,
 * and reports the tokens whose own counter moved — so it finds its work without looking at idle
 * sessions.
 *
 * Why the first 32 tokens go without summaries: every word an announcement moves is a cache line
 * the receiver's core must fetch from the sender's, one after the other (the summaries are read
 * before the token), and every locked add stalls the sender until it owns the line (a C
 * ping-pong of one line between two cores measures it); `bench/e2e/ab.ts` at 1 in flight read
 * 1.12–1.19× the calls/s of version 2 (bench/results/README.md). A process
 * with a few sessions (the usual client, a small server) pays for none of them; version 3 of the
 * page (version 2 summed every token).
 *
 * Why counters and not bits: a receiver that cleared bits would race with announcers (a clear
 * between another process's load and store loses an announcement for good, and a runtime may
 * not make read-modify-write atomic on memory it does not know is shared). A token's counter has
 * one writer (the session's peer); a group counter may lose an increment to a racing writer, but
 * it still moves, and every token write comes before its group's increment, so the descent sees it.
 *
 * Layout (u32 words, little-endian; {@link NOTIFY_BYTES} bytes):
 * ```
 *      0 magic 'VBNP'  4 version  8 doorbell (futex)  12 sleeping  16 capacity (tokens)
 *     20 napping (the owner blocks its thread in a short futex wait: the first announcer clears
 *        it and wakes it)
 *     64 top[64]        counter of tokens 1024·k … 1024·k + 1023 (those ≥ 32 only)
 *    512 group[2048]    counter of tokens 32·g … 32·g + 31 (group 0, the flat tokens: unused)
 *   8704 token[65536]   counter of token t (its one writer is the session's peer)
 * ```
 *
 * The page is a sealed memfd (`shm_object.ts`): it has no name in /dev/shm that another user
 * could squat or a bystander could truncate. Its process keeps the fd open for its whole life; a
 * peer learns `{pid, fd}` in the hello, opens `/proc/<pid>/fd/<fd>` (the kernel grants that only
 * to processes that could read the owner's memory anyway), checks the owner uid, the seals and
 * the size, maps it and closes its fd: no one can shrink it under a mapping, and it goes away with
 * the last process that maps it. A peer of the same user that scribbles on it can only cause
 * spurious polls of this process's sessions (tokens are checked, and a poll of a session with no
 * work finds nothing) — never reach another session's memory.
 * Threading: the owner's JS thread; `wait` blocks off-thread (helper futex through nonblocking FFI).
 * @module
 */
import { pid } from "node:process";
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { ReadinessSource } from "../readiness.ts";
import { ShmMapping } from "./shm_object.ts";
import { loadAcquire } from "../word_order.ts";

/** Bytes of a notify page. */
export const NOTIFY_BYTES = 272 * 1024;
/** Tokens one page can name. */
export const NOTIFY_CAPACITY = 65536;
const MAGIC = 0x504e4256; // 'VBNP'
const VERSION = 3;
const W_MAGIC = 0, W_VERSION = 1, W_DOORBELL = 2, W_SLEEPING = 3, W_CAPACITY = 4, W_NAPPING = 5;
const TOP = 64 >> 2, GROUP = 512 >> 2, TOKEN = 8704 >> 2;
/** Tokens below this are announced without summaries and read directly (group 0). */
export const FLAT_TOKENS = 32;
/**
 * Where a process's notify page is: the memfd `fd` its process `pid` holds open (peers open it
 * through `/proc/<pid>/fd/<fd>`). Travels in hellos and offers.
 */
export interface NotifyRef {
  pid: number;
  fd: number;
}

/**
 * A peer's notify page, mapped to announce on it. Shared by every endpoint of this process that
 * talks to that peer process (reference-counted by name). Owner: the endpoints holding it.
 */
export class PeerNotifyPage {
  static readonly #open = new Map<string, PeerNotifyPage>();
  readonly #words: Int32Array;
  readonly #doorbell: NonNullPtr;
  readonly #capacity: number;
  #refs = 1;

  private constructor(
    private readonly mapping: ShmMapping,
    private readonly helper: Helper,
    private readonly key: string,
  ) {
    const b = mapping.bytes;
    this.#words = new Int32Array(b.buffer, b.byteOffset, NOTIFY_BYTES >> 2);
    this.#doorbell = mapping.pointerAt(W_DOORBELL << 2);
    this.#capacity = Math.min(NOTIFY_CAPACITY, this.#words[W_CAPACITY] >>> 0);
  }

  /**
   * Maps the page `ref` names (or shares the mapping this process already has). Throws HANDSHAKE
   * when it belongs to another user, is not sealed, has another size or is no notify page, and
   * NATIVE_CALL when it cannot be opened (the process is gone, the fd closed).
   */
  static async open(ref: NotifyRef, helper: Helper): Promise<PeerNotifyPage> {
    const name = `${ref.pid}:${ref.fd}`;
    const have = PeerNotifyPage.#open.get(name);
    if (have) {
      have.#refs++;
      return have;
    }
    const label = `shm notify page of pid ${ref.pid}`;
    const mapping = await ShmMapping.openSealed(ref.pid, ref.fd, NOTIFY_BYTES, label);
    const w = new Uint32Array(mapping.bytes.buffer, mapping.bytes.byteOffset, 8);
    if (w[W_MAGIC] !== MAGIC || w[W_VERSION] !== VERSION) {
      mapping.close();
      throw new VerbusError(
        "HANDSHAKE",
        `/proc/${ref.pid}/fd/${ref.fd} (${label}) is not a verbus notify page (version ${VERSION})`,
      );
    }
    const raced = PeerNotifyPage.#open.get(name); // another open finished while we awaited
    if (raced) {
      mapping.close();
      raced.#refs++;
      return raced;
    }
    const page = new PeerNotifyPage(mapping, helper, name);
    PeerNotifyPage.#open.set(name, page);
    return page;
  }

  /**
   * Announces `token`: the peer's engine will poll that endpoint. Wakes the peer process only
   * when it sleeps or naps (of several announcers to one nap, only the first that takes the
   * napping flag wakes it). Data path: one atomic add (three for a token ≥ {@link FLAT_TOKENS}), a
   * futex wake only for a sleeper or napper. The owner's JS thread.
   */
  announce(token: number): void {
    if (token >>> 0 >= this.#capacity) return;
    const w = this.#words;
    // The token's counter has one writer (us): a plain store, no locked add. The doorbell's add
    // publishes it (a reader that sees the doorbell move sees the store).
    w[TOKEN + token] = (w[TOKEN + token] + 1) | 0;
    if (token >= FLAT_TOKENS) {
      Atomics.add(w, GROUP + (token >>> 5), 1);
      Atomics.add(w, TOP + (token >>> 10), 1);
    }
    Atomics.add(w, W_DOORBELL, 1);
    // The doorbell is added before the flags are read, and a napper raises its flag before its
    // futex compares the doorbell (both sequentially consistent): a nap either sees the doorbell
    // move or is woken here.
    // A napper shares the futex word with a parked idle wait that may still be outstanding: wake
    // two then, so a wake given to the parked wait does not leave the napper to its timeout.
    const napper = Atomics.load(w, W_NAPPING) !== 0 && Atomics.exchange(w, W_NAPPING, 0) !== 0;
    if (napper || Atomics.load(w, W_SLEEPING) !== 0) {
      this.helper.lib.symbols.vb_futex_wake(this.#doorbell, napper ? 2 : 1);
    }
  }

  /** True while the page's owner process sleeps in its idle wait. */
  get sleeping(): boolean {
    return Atomics.load(this.#words, W_SLEEPING) !== 0;
  }

  /** True while the page's owner naps (blocks its thread in a short wait) and no announcer woke it yet. */
  get napping(): boolean {
    return Atomics.load(this.#words, W_NAPPING) !== 0;
  }

  /**
   * Drops one reference; the last one unmaps (the page's memory goes with the last process that
   * maps it or holds its fd). Safe to call once per `open`.
   */
  release(): void {
    if (--this.#refs > 0) return;
    PeerNotifyPage.#open.delete(this.key);
    this.mapping.close();
  }
}

/**
 * This process's notify page: the shm readiness source. Created once per process (on the first
 * shm session), its pages reserved, its memfd held open for the life of the process so new peers
 * can map it; it dies with the process (nothing is left behind, even by a crash).
 */
export class ProcessNotifyPage implements ReadinessSource {
  static #instance: Promise<ProcessNotifyPage> | null = null;
  static #ready: ProcessNotifyPage | null = null;
  readonly kind = "shm" as const;
  readonly capacity = NOTIFY_CAPACITY;
  /** Where peers find the page (it travels in hellos and offers). */
  readonly ref: NotifyRef;
  readonly #words: Int32Array;
  readonly #doorbell: NonNullPtr;
  readonly #free: Uint32Array;
  /** The counters as this process last saw them (never shared). */
  readonly #seenTop = new Uint32Array(NOTIFY_CAPACITY >>> 10);
  readonly #seenGroup = new Uint32Array(NOTIFY_CAPACITY >>> 5);
  readonly #seenToken = new Uint32Array(NOTIFY_CAPACITY);
  #freeCount = 0;
  /** Tokens ever handed out (summary words above `ceil(#highWater / 1024)` are never looked at). */
  #highWater = 0;
  #waiters = 0;
  /** The doorbell value the last collect started from. */
  #collectedAt = -1;

  private constructor(private readonly mapping: ShmMapping, private readonly helper: Helper) {
    this.ref = { pid, fd: mapping.fd };
    const b = mapping.bytes;
    this.#words = new Int32Array(b.buffer, b.byteOffset, NOTIFY_BYTES >> 2);
    this.#doorbell = mapping.pointerAt(W_DOORBELL << 2);
    this.#free = new Uint32Array(NOTIFY_CAPACITY);
    const w = this.#words;
    w[W_VERSION] = VERSION;
    w[W_CAPACITY] = NOTIFY_CAPACITY;
    Atomics.store(w, W_MAGIC, MAGIC); // published last
  }

  /**
   * The process's page, created on first call. Throws NATIVE_CALL when shm is unusable (ENOSPC or
   * ENOMEM when its pages cannot be reserved).
   */
  static forProcess(helper: Helper): Promise<ProcessNotifyPage> {
    ProcessNotifyPage.#instance ??= (async () => {
      const mapping = await ShmMapping.createSealed(
        `verbus-${pid}-notify`,
        NOTIFY_BYTES,
        NOTIFY_BYTES,
      );
      const page = new ProcessNotifyPage(mapping, helper);
      ProcessNotifyPage.#ready = page;
      return page;
    })().catch((e) => {
      ProcessNotifyPage.#instance = null;
      throw e;
    });
    return ProcessNotifyPage.#instance;
  }

  /** The process's page if it exists already (else null). */
  static current(): ProcessNotifyPage | null {
    return ProcessNotifyPage.#ready;
  }

  /** A token for a new endpoint, or -1 when all {@link NOTIFY_CAPACITY} are in use. */
  allocate(): number {
    if (this.#freeCount > 0) return this.#free[--this.#freeCount];
    return this.#highWater < NOTIFY_CAPACITY ? this.#highWater++ : -1;
  }

  /** Returns a token (its endpoint closed). A stale announcement of it costs one empty poll. */
  release(token: number): void {
    if (token < 0 || token >= this.#highWater) return;
    this.#free[this.#freeCount++] = token;
  }

  collect(out: Uint32Array): number {
    const w = this.#words, top = this.#seenTop, group = this.#seenGroup, seen = this.#seenToken;
    // Every announcement ends by moving the doorbell: unmoved, nothing new is complete (one that
    // is still being written moves it when done, and the next collect sees it).
    const doorbell = loadAcquire(w, W_DOORBELL);
    if (doorbell === this.#collectedAt) return 0;
    this.#collectedAt = doorbell;
    const high = this.#highWater, tops = (high + 1023) >>> 10;
    let n = 0;
    // The flat tokens: their counters, straight away (announced without summaries).
    for (let token = 0, end = Math.min(high, FLAT_TOKENS); token < end; token++) {
      const v = loadAcquire(w, TOKEN + token) >>> 0;
      if (v !== seen[token]) {
        seen[token] = v;
        out[n++] = token;
      }
    }
    if (high <= FLAT_TOKENS) return n;
    for (let k = 0; k < tops; k++) {
      const t = loadAcquire(w, TOP + k) >>> 0;
      if (t === top[k]) continue;
      top[k] = t;
      const gEnd = Math.min((k + 1) << 5, (high + 31) >>> 5);
      for (let g = k << 5; g < gEnd; g++) {
        const c = loadAcquire(w, GROUP + g) >>> 0;
        if (c === group[g]) continue;
        group[g] = c;
        const tEnd = Math.min((g + 1) << 5, high);
        for (let token = g << 5; token < tEnd; token++) {
          const v = loadAcquire(w, TOKEN + token) >>> 0;
          if (v !== seen[token]) {
            seen[token] = v;
            out[n++] = token;
          }
        }
      }
    }
    return n;
  }

  doorbell(): number {
    return loadAcquire(this.#words, W_DOORBELL);
  }

  async wait(seen: number, timeoutMs: number): Promise<boolean> {
    const w = this.#words;
    // Several waits may overlap (a loop woken locally leaves its wait parked and may start
    // another): the flag stays set until the last returns, or a peer could skip a needed wake.
    this.#waiters++;
    Atomics.store(w, W_SLEEPING, 1);
    try {
      if (Atomics.load(w, W_DOORBELL) !== seen) return true;
      const rc = await this.helper.lib.nonblocking.vb_futex_wait(
        this.#doorbell,
        seen >>> 0,
        timeoutMs,
      );
      return rc === 0 || rc === 1;
    } finally {
      if (--this.#waiters === 0) Atomics.store(w, W_SLEEPING, 0);
    }
  }

  nap(seen: number, timeoutUs: number): boolean {
    const w = this.#words;
    Atomics.store(w, W_NAPPING, 1);
    if (Atomics.load(w, W_DOORBELL) !== seen) {
      Atomics.store(w, W_NAPPING, 0);
      return true;
    }
    const rc = this.helper.lib.symbols.vb_futex_wait_us(
      this.#doorbell,
      seen >>> 0,
      Math.max(1, Math.min(1_000_000, Math.round(timeoutUs))),
    );
    Atomics.store(w, W_NAPPING, 0);
    return rc === 0 || rc === 1;
  }

  /** True while this process naps ({@link nap}; tests). */
  get napping(): boolean {
    return Atomics.load(this.#words, W_NAPPING) !== 0;
  }

  wake(): void {
    Atomics.add(this.#words, W_DOORBELL, 1);
    if (Atomics.load(this.#words, W_SLEEPING) !== 0) {
      this.helper.lib.symbols.vb_futex_wake(this.#doorbell, 0x7fffffff);
    }
  }

  /** Parked waits right now (tests: one wait serves every session). */
  get parkedWaits(): number {
    return this.#waiters;
  }
}
