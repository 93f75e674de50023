/**
 * The same-host agent's shared-memory object: one sealed memfd per agent, which producers of the
 * same user find through the agent's record in their private directory (`agent_directory.ts`:
 * no other user can stand in for the agent, and no one can shrink the object under a mapping),
 * holding the MPSC request ring (`mpsc_ring.ts`), a table of producers and each producer's own slots. A
 * producer writes its request record into one of its slots, then the slot's length word, then the
 * slot's state (POSTED), then publishes the slot's descriptor in the ring and rings the agent's
 * doorbell (a futex word; woken only when the agent sleeps). The agent answers in the same slot,
 * length before state (READY), and rings that producer's own doorbell.
 *
 * A record larger than a slot spills: each producer has its own spill area (`spillBytes`, split
 * into a request half the producer allocates in and a response half the agent allocates in, each
 * side with private bookkeeping, `spill_allocator.ts`); the slot then carries only the record's
 * offset in that half (slot word 3 = 1, data word 0 = offset, length word = the record's length).
 * The reader checks offset and length against the half before it reads a byte. The producer frees
 * its request range when the answer is read; the agent frees a response range once the producer
 * consumed it (the slot is FREE or posted again), or all of them when the producer's entry is
 * reclaimed.
 *
 * Layout (byte offsets; u32 words, little-endian):
 * ```
 *      0 magic 'VBAG'  4 version  8 agent pid  12 state (1 READY, 2 CLOSED)  16 entries N
 *     20 producers P  24 slots per producer K  28 slot bytes S  32 epoch  36 spill bytes X
 *     64 ring tail (producers CAS)    128 ring head (agent)    192 doorbell  196 agent sleeping
 *    256 counters (agent): delivered, reclaimed, garbage, rejected, producers reclaimed, attached,
 *        recovered (descriptors re-enqueued after a scribble lost them), spilled (answers put in
 *        spill areas), spill bytes in use (the agent's response ranges)
 *   4096 producer table, P × 64 B: owner (0 free, pid, -1 leaving), doorbell, sleeping
 *    R   ring entries, N × 4 B                       (R = the table's end, rounded to 4 KiB)
 *    D   slots, P × K × S B: state, seq, length, spilled, then S − 16 data bytes
 *        state: 0 FREE (producer's), 1 POSTED, 2 TAKEN (agent's), 3 READY (producer's again)
 *    X'  spill areas, P × X B: requests [0, X/2), responses [X/2, X)   (X' = D's end, 4 KiB)
 * ```
 * The agent treats producers as hostile: a descriptor must name an attached producer's slot in
 * state POSTED (taken by CAS, so one slot never runs twice), a length must fit the slot (else the
 * slot is answered with length 0, "rejected"), and a producer whose process died — or that left —
 * gets its table entry back once none of its calls is still running (counted). What is defended
 * is the agent and the other producers' progress against garbage in the ring, in descriptors, in
 * a producer's own table entry and slots; a process of the same user can also write the header's
 * identity words or another producer's slots, which this layout does not defend (nor could it:
 * that process could as well signal the agent).
 *
 * The agent's side is `agent_ring_host.ts`, a producer's `agent_ring_port.ts`; this file holds the
 * layout and what both share.
 *
 * Threading: one JS thread per side; futex waits run off-thread (helper, nonblocking FFI).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { AgentRingSizes } from "./mod.ts";
import { MpscRing } from "./mpsc_ring.ts";
import type { ShmMapping } from "../shm/shm_object.ts";

/** The header's magic ('VBAG') and version. */
export const MAGIC = 0x47414256; // 'VBAG'
export const VERSION = 2;
/** Header word indexes. */
export const HEADER_WORD = {
  magic: 0,
  version: 1,
  agentPid: 2,
  state: 3,
  entries: 4,
  producers: 5,
  slots: 6,
  slotBytes: 7,
  epoch: 8,
  spillBytes: 9,
  tail: 16,
  head: 32,
  doorbell: 48,
  sleeping: 49,
  counters: 64,
} as const;
/** Counter words after `HEADER_WORD.counters`, in this order. */
const COUNTERS = [
  "delivered",
  "reclaimed",
  "garbage",
  "rejected",
  "producersReclaimed",
  "attached",
  "recovered",
  "spilled",
  "spillInUse",
  "held",
];
/** Header states. */
export const STATE_READY = 1, STATE_CLOSED = 2;
const TABLE = 4096, ENTRY_BYTES = 64;
const SLOT_HEADER = 16;
/** Slot states. */
export const SLOT = { FREE: 0, POSTED: 1, TAKEN: 2, READY: 3 } as const;
/** A table owner word: the producer left (the agent frees the entry when nothing of it runs). */
export const OWNER_LEAVING = -1;

const align = (n: number) => Math.ceil(n / 4096) * 4096;

/** Byte offsets of the areas for `sizes`. */
export function areas(
  s: AgentRingSizes,
): { entries: number; slots: number; spill: number; total: number } {
  const entries = align(TABLE + s.producers * ENTRY_BYTES);
  const slots = align(entries + s.entries * 4);
  const spill = align(slots + s.producers * s.slots * s.slotBytes);
  return { entries, slots, spill, total: spill + s.producers * s.spillBytes };
}

/** Checks sizes (agent options, or a header read from shm). Throws naming the bad one. */
export function checkSizes(s: AgentRingSizes): void {
  const bad = (what: string) => {
    throw new VerbusError("INVALID_OPTIONS", `agent ring: ${what}`);
  };
  const pow2 = (n: number) => Number.isInteger(n) && n > 0 && (n & (n - 1)) === 0;
  if (!pow2(s.entries) || s.entries < 2 || s.entries > 65536) bad(`entries ${s.entries}`);
  if (!Number.isInteger(s.producers) || s.producers < 1 || s.producers > 1024) {
    bad(`producers ${s.producers}`);
  }
  if (!Number.isInteger(s.slots) || s.slots < 1 || s.slots > 1024) bad(`slots ${s.slots}`);
  if (s.producers * s.slots > 0xfffe) bad(`producers × slots ${s.producers * s.slots} > 65534`);
  if (!pow2(s.slotBytes) || s.slotBytes < 256 || s.slotBytes > 1 << 24) {
    bad(`slot bytes ${s.slotBytes}`);
  }
  if (!Number.isInteger(s.spillBytes) || s.spillBytes < 0 || s.spillBytes % 8192 !== 0) {
    bad(`spill bytes ${s.spillBytes} (a multiple of 8192)`);
  }
  if (s.spillBytes > 1 << 30 || s.producers * s.spillBytes > 2 ** 36) {
    bad(`spill bytes ${s.spillBytes} × ${s.producers} producers`);
  }
}

/** The mapping, its words and ring, shared by both sides. */
export abstract class AgentRingBase {
  #parked = 0;
  #unmapped = false;
  /** Doorbell word → its pointer (made once: a pointer costs an allocation). */
  readonly #pointers = new Map<number, NonNullPtr>();
  protected readonly words: Int32Array;
  protected readonly ring: MpscRing;
  protected readonly slotBase: number;
  /** Producers, slots per producer, bytes of a slot's data area. */
  readonly sizes: AgentRingSizes;
  /** Bytes a record (request or response) may have in a slot. */
  readonly slotData: number;
  /** Bytes of one half of a producer's spill area: the largest spilled record (0: none). */
  readonly spillHalf: number;
  protected readonly spillBase: number;

  protected constructor(
    protected readonly mapping: ShmMapping,
    protected readonly helper: Helper,
    sizes: AgentRingSizes,
  ) {
    const b = mapping.bytes;
    this.words = new Int32Array(b.buffer, b.byteOffset, b.byteLength >> 2);
    this.sizes = sizes;
    const a = areas(sizes);
    this.slotBase = a.slots;
    this.slotData = sizes.slotBytes - SLOT_HEADER;
    this.spillBase = a.spill;
    this.spillHalf = sizes.spillBytes / 2;
    this.ring = new MpscRing(this.words, {
      tail: HEADER_WORD.tail,
      head: HEADER_WORD.head,
      entries: a.entries >> 2,
      capacity: sizes.entries,
    });
  }

  /** Word index of slot (p, k)'s header. */
  protected slotWord(p: number, k: number): number {
    return (this.slotBase + (p * this.sizes.slots + k) * this.sizes.slotBytes) >> 2;
  }

  /** Slot (p, k)'s data area (zero-copy view of shared memory). */
  protected slotBytes(p: number, k: number, length: number): Uint8Array {
    const at = this.slotBase + (p * this.sizes.slots + k) * this.sizes.slotBytes + SLOT_HEADER;
    return this.mapping.bytes.subarray(at, at + length);
  }

  /** Per slot, its whole data area's view, made on first use (a view per call costs on V8). */
  readonly #slotViews: (Uint8Array | undefined)[] = [];

  /** Slot (p, k)'s whole data area ({@link slotData} bytes): the same view every time. */
  protected slotArea(p: number, k: number): Uint8Array {
    const i = p * this.sizes.slots + k;
    return this.#slotViews[i] ??= this.slotBytes(p, k, this.slotData);
  }

  /** The largest record either side can send (a slot's, or a spill half's when larger). */
  get maxRecord(): number {
    return Math.max(this.slotData, this.spillHalf);
  }

  /** Bytes [off, off + length) of producer p's spill half (0 requests, 1 responses). */
  protected spillView(p: number, half: 0 | 1, off: number, length: number): Uint8Array {
    const at = this.spillBase + p * this.sizes.spillBytes + half * this.spillHalf + off;
    return this.mapping.bytes.subarray(at, at + length);
  }

  /**
   * The offset a spilled slot (word 3 = 1) names, when `[offset, offset + length)` lies inside a
   * spill half and starts on 8 bytes; else −1 (a peer's lie). −2: the slot did not spill.
   */
  protected spilledAt(sw: number, length: number): number {
    if (Atomics.load(this.words, sw + 3) !== 1) return -2;
    const off = Atomics.load(this.words, sw + SLOT_HEADER / 4);
    return off >= 0 && off % 8 === 0 && length > 0 && off + length <= this.spillHalf ? off : -1;
  }

  /** Marks slot word `sw` as carrying a record at `off` of a spill half (−1: in the slot). */
  protected markSpill(sw: number, off: number): void {
    if (off >= 0) Atomics.store(this.words, sw + SLOT_HEADER / 4, off);
    Atomics.store(this.words, sw + 3, off >= 0 ? 1 : 0);
  }

  protected tableWord(p: number): number {
    return (TABLE + p * ENTRY_BYTES) >> 2;
  }

  /** Sleeps on the doorbell word `word` until it moves past `seen` (or `timeoutMs`). */
  protected async park(
    word: number,
    sleepWord: number,
    seen: number,
    ms: number,
  ): Promise<boolean> {
    if (this.#unmapped) return false;
    this.#parked++;
    Atomics.store(this.words, sleepWord, 1);
    try {
      if (Atomics.load(this.words, word) !== seen) return true;
      const ptr = this.mapping.pointerAt(word << 2);
      const rc = await this.helper.lib.nonblocking.vb_futex_wait(ptr, seen >>> 0, ms);
      return rc === 0 || rc === 1;
    } finally {
      // A close() while this wait was parked left the unmap to us: the futex still named it.
      if (--this.#parked === 0 && this.#unmapped) this.mapping.close();
      else if (!this.#unmapped) Atomics.store(this.words, sleepWord, 0);
    }
  }

  /**
   * Blocks this thread (no hand-off to another) until doorbell `word` moves past `seen` or `us`
   * µs pass, raising the sleeping flag `sleepWord` meanwhile so the peer wakes it as it wakes a
   * parked wait. True when the doorbell moved (or had moved). The caller's event loop waits.
   */
  protected napOn(word: number, sleepWord: number, seen: number, us: number): boolean {
    if (this.#unmapped) return false;
    const w = this.words;
    Atomics.store(w, sleepWord, 1);
    if (Atomics.load(w, word) !== seen) {
      Atomics.store(w, sleepWord, 0);
      return true;
    }
    let ptr = this.#pointers.get(word);
    if (!ptr) this.#pointers.set(word, ptr = this.mapping.pointerAt(word << 2) as NonNullPtr);
    const rc = this.helper.lib.symbols.vb_futex_wait_us(ptr, seen >>> 0, us);
    Atomics.store(w, sleepWord, 0);
    return rc === 0 || rc === 1;
  }

  /** Unmaps now, or when the last parked wait returns (it still sleeps on the mapping). */
  protected unmap(): void {
    if (this.#unmapped) return;
    this.#unmapped = true;
    if (this.#parked === 0) this.mapping.close();
  }

  /** Bumps the doorbell word `word`; wakes its sleeper. */
  protected bump(word: number, sleepWord: number): void {
    Atomics.add(this.words, word, 1);
    this.wakeIfSleeping(word, sleepWord);
  }

  /**
   * Wakes the sleeper of doorbell `word` if its flag says it sleeps: one syscall, else none. The
   * waker that clears the flag (1 → 0) is the only one to call the kernel, so many producers
   * posting while the agent's wait returns cost one wake-up, not one each. Safe: the doorbell
   * moved before this, and a sleeper that sets its flag re-reads the doorbell (and its futex
   * wait compares it) before it sleeps.
   */
  protected wakeIfSleeping(word: number, sleepWord: number): void {
    if (this.#unmapped || Atomics.compareExchange(this.words, sleepWord, 1, 0) !== 1) return;
    let ptr = this.#pointers.get(word);
    if (!ptr) this.#pointers.set(word, ptr = this.mapping.pointerAt(word << 2) as NonNullPtr);
    this.helper.lib.symbols.vb_futex_wake(ptr, 1);
  }

  /** The agent's counters as the shared header has them. */
  counters(): Record<string, number> {
    return Object.fromEntries(
      COUNTERS.map((c, i) => [c, Atomics.load(this.words, HEADER_WORD.counters + i)]),
    );
  }
}
