/**
 * A lock-free multi-producer single-consumer ring of one-word descriptors in shared memory (the
 * same-host agent's request queue, `transport/agent_ring/agent_ring.ts`). Producers are other
 * processes, possibly hostile or killed at any instruction; the consumer trusts nothing it reads.
 *
 * Words (Int32, in the caller's mapping; `tail` and `head` on their own cache lines):
 * ```
 *   tail   claim counter (u32, wraps): producers CAS it from t to t+1 to own position t
 *   head   the consumer's position (u32, wraps): it alone writes it; producers read it for FULL
 *   entry[N]  N = 2^k; position p lives in entry[p & (N-1)]:
 *     31            16 15             0
 *     ┌───────────────┬───────────────┐
 *     │ lap tag       │ desc          │  lap tag = (p >>> k) & 0xffff
 *     └───────────────┴───────────────┘  desc 0 = EMPTY for that lap, 0xffff = CONSUMED,
 *                                        else the producer's descriptor (1 … 0xfffe)
 * ```
 * Producer: claim — read tail t and head h; `t − h ≥ N` is FULL (returned, not thrown; a
 * `t − h` over N is impossible — a scribbled head — and reported FULL too, so the producer rings
 * the consumer, whose next drain rewrites head from its private position); else CAS
 * tail t → t+1 (retry on a lost race). The record itself was already written, length last, in
 * the producer's own slot (Aeron's length-last publication, moved out of the shared ring so that
 * a late writer can only ever scribble on its own memory); publish is one CAS of the entry from
 * EMPTY(lap of t) to (lap of t, desc). A CAS that fails means the consumer reclaimed the
 * position (the producer stalled past the timeout) or someone scribbled on it: LOST, the
 * producer claims again — the record was never seen, so nothing runs twice.
 *
 * Consumer: scans `head … tail` (at most N), hands over published descriptors and marks them
 * CONSUMED (so one position never delivers twice), then moves head over consumed entries,
 * resetting each to EMPTY of its next lap before the head store that lets a producer reuse it.
 * A producer that died between its claim and its publish leaves an EMPTY entry below tail: when
 * head has not moved for `reclaimMs`, every still-EMPTY position claimed before the stall began
 * is CAS'd to CONSUMED (a late publish then fails: LOST) and counted. An entry whose lap tag is
 * wrong, a desc outside 1 … maxDesc, or a tail more than N ahead of head is garbage: counted,
 * skipped or repaired, never trusted.
 *
 * Threading: producers and the consumer each on their own JS thread; allocation-free data path.
 * @module
 */

/** `claim()` when the ring has no free position (the producer may wait or go elsewhere). */
export const RING_FULL = -1;
const DESC_MASK = 0xffff;
const CONSUMED = 0xffff;
/** The largest descriptor a producer may publish. */
export const MAX_DESC = 0xfffe;

/** What the consumer counts (monotonic; it alone writes them). */
export interface RingCounters {
  /** Descriptors delivered. */
  delivered: number;
  /** Positions reclaimed from producers that claimed and never published. */
  reclaimed: number;
  /** Entries, descriptors or tails that broke the format (ignored or repaired). */
  garbage: number;
}

/** Word indexes of the ring inside an Int32Array. */
export interface RingWords {
  readonly tail: number;
  readonly head: number;
  /** First entry word. */
  readonly entries: number;
  /** Entries (a power of two, at most 65536). */
  readonly capacity: number;
}

/** One ring over shared words; a process makes one per role (producer or consumer). */
export class MpscRing {
  readonly #w: Int32Array;
  readonly #tail: number;
  readonly #head: number;
  readonly #base: number;
  readonly #n: number;
  readonly #mask: number;
  readonly #shift: number;
  // Consumer state (private: never read back from shared memory).
  #pos = 0;
  #stallPos = -1;
  #stallSince = 0;
  #stallTail = 0;
  /** Consumer counters. */
  readonly counters: RingCounters = { delivered: 0, reclaimed: 0, garbage: 0 };

  constructor(words: Int32Array, layout: RingWords) {
    const n = layout.capacity;
    if (!Number.isInteger(n) || n < 2 || n > 65536 || (n & (n - 1)) !== 0) {
      throw new RangeError(`ring capacity ${n} is not a power of two in 2 … 65536`);
    }
    if (layout.entries + n > words.length || layout.tail >= words.length) {
      throw new RangeError("ring words lie outside the mapping");
    }
    this.#w = words;
    this.#tail = layout.tail;
    this.#head = layout.head;
    this.#base = layout.entries;
    this.#n = n;
    this.#mask = n - 1;
    this.#shift = 31 - Math.clz32(n);
  }

  /** Entries in the ring. */
  get capacity(): number {
    return this.#n;
  }

  #empty(pos: number): number {
    return ((pos >>> this.#shift) & 0xffff) << 16;
  }

  // ---- producer ----

  /** Claims a position: returns it (u32) or {@link RING_FULL}. Publish it next, at once. */
  claim(): number {
    const w = this.#w;
    for (let spins = 0; spins < 1024; spins++) {
      const t = Atomics.load(w, this.#tail) >>> 0;
      const h = Atomics.load(w, this.#head) >>> 0;
      if (((t - h) >>> 0) >= this.#n) return RING_FULL;
      if (Atomics.compareExchange(w, this.#tail, t | 0, (t + 1) | 0) === (t | 0)) return t;
    }
    return RING_FULL; // a storm of lost races: report FULL rather than spin on
  }

  /** Publishes `desc` (1 … {@link MAX_DESC}) at a claimed position; false: LOST (claim again). */
  publish(pos: number, desc: number): boolean {
    const e = this.#empty(pos);
    const i = this.#base + (pos & this.#mask);
    return Atomics.compareExchange(this.#w, i, e | 0, (e | (desc & DESC_MASK)) | 0) === (e | 0);
  }

  // ---- consumer ----

  /** Makes this ring the consumer of freshly zeroed words (head = tail = 0). */
  resetAsConsumer(): void {
    this.#pos = 0;
    Atomics.store(this.#w, this.#head, 0);
  }

  /**
   * Moves up to `out.length` published descriptors (each 1 … `maxDesc`) into `out`; returns how
   * many. `nowMs` drives the reclaim of dead producers' positions after `reclaimMs`.
   */
  drain(out: Uint32Array, maxDesc: number, nowMs: number, reclaimMs: number): number {
    const w = this.#w, base = this.#base, mask = this.#mask;
    this.repairHead();
    let t = Atomics.load(w, this.#tail) >>> 0;
    let span = (t - this.#pos) >>> 0;
    if (span > this.#n) {
      // A tail no honest producer can make (more than N ahead of head, or behind it): repair.
      this.counters.garbage++;
      const fixed = (this.#pos + this.#n) >>> 0;
      Atomics.compareExchange(w, this.#tail, t | 0, fixed | 0);
      t = fixed;
      span = this.#n;
    }
    let n = 0;
    for (let k = 0; k < span && n < out.length; k++) {
      const pos = (this.#pos + k) >>> 0;
      const i = base + (pos & mask);
      const v = Atomics.load(w, i);
      const e = this.#empty(pos);
      if ((v & ~DESC_MASK) !== e) {
        this.counters.garbage++; // wrong lap tag: scribbled; skip the position
        Atomics.store(w, i, (e | CONSUMED) | 0);
        continue;
      }
      const d = v & DESC_MASK;
      if (d === 0 || d === CONSUMED) continue;
      Atomics.store(w, i, (e | CONSUMED) | 0);
      if (d > maxDesc) {
        this.counters.garbage++;
        continue;
      }
      out[n++] = d;
      this.counters.delivered++;
    }
    this.#advance(t, nowMs, reclaimMs);
    return n;
  }

  /**
   * Rewrites the shared head word from the consumer's private position when anyone else wrote it
   * (counted as garbage): producers trust head for FULL, so one scribbled word would otherwise
   * refuse every post for good. Called by every drain and by the agent's sweep. Consumer only.
   */
  repairHead(): void {
    if ((Atomics.load(this.#w, this.#head) >>> 0) === this.#pos) return;
    Atomics.store(this.#w, this.#head, this.#pos | 0);
    this.counters.garbage++;
  }

  /** Moves head over consumed entries; reclaims positions stuck EMPTY for `reclaimMs`. */
  #advance(t: number, nowMs: number, reclaimMs: number): void {
    const w = this.#w, base = this.#base, mask = this.#mask;
    let pos = this.#pos;
    while (pos !== t) {
      const i = base + (pos & mask);
      if (Atomics.load(w, i) !== ((this.#empty(pos) | CONSUMED) | 0)) break;
      Atomics.store(w, i, this.#empty(pos + this.#n) | 0);
      pos = (pos + 1) >>> 0;
    }
    if (pos !== this.#pos) {
      this.#pos = pos;
      this.#stallPos = -1;
      Atomics.store(w, this.#head, pos | 0);
      return;
    }
    if (pos === t) return;
    // Head stuck on a claimed, unpublished position.
    if (this.#stallPos !== pos) {
      this.#stallPos = pos;
      this.#stallSince = nowMs;
      this.#stallTail = t;
      return;
    }
    if (nowMs - this.#stallSince < reclaimMs) return;
    const count = Math.min((this.#stallTail - pos) >>> 0, this.#n);
    for (let k = 0; k < count; k++) {
      const p = (pos + k) >>> 0;
      const e = this.#empty(p);
      if (Atomics.compareExchange(w, base + (p & mask), e | 0, (e | CONSUMED) | 0) === (e | 0)) {
        this.counters.reclaimed++;
      }
    }
    this.#stallPos = -1;
  }

  /** Positions claimed and not yet passed by head (consumer's view). */
  pending(): number {
    return ((Atomics.load(this.#w, this.#tail) >>> 0) - this.#pos) >>> 0;
  }
}
