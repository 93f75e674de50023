/**
 * A producer's side of the agent ring (layout: `agent_ring.ts`): finds the agent's record in this
 * user's directory (`agent_directory.ts`), maps the sealed memfd it names (checking its owner,
 * seals, size, header and that its agent runs), takes a table entry, and posts requests from its
 * own slots — length, then POSTED, then the ring descriptor, then the agent's doorbell. A record
 * larger than a slot goes into this producer's spill area (request half), allocated here and freed
 * when its slot is released; a spilled answer is read from the response half, bounds-checked.
 *
 * Threading: the producer's JS thread; its wait runs off-thread.
 * @module
 */
import { pid } from "node:process";
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import { loadHelper } from "../../ffi/helper.ts";
import type { AgentRingProducer, AgentRingSizes } from "./mod.ts";
import { agentDirectory, readAgentRecord } from "./agent_directory.ts";
import {
  AgentRingBase,
  areas,
  checkSizes,
  HEADER_WORD,
  MAGIC,
  OWNER_LEAVING,
  SLOT,
  STATE_CLOSED,
  STATE_READY,
  VERSION,
} from "./agent_ring.ts";
import { RING_FULL } from "./mpsc_ring.ts";
import { effectiveUid, processAlive, ShmMapping } from "../shm/shm_object.ts";
import { SpillAllocator } from "./spill_allocator.ts";

/** A producer's side: attached to one table entry, owning its K slots. */
export class AgentRingPort extends AgentRingBase implements AgentRingProducer {
  /** The agent's pid as its header says. */
  readonly agentPid: number;
  #index = -1;
  #closed = false;
  readonly #spill: SpillAllocator;
  /** Per slot: the offset and size of its request record in the spill half (−1: none). */
  readonly #reqOff: Int32Array;
  readonly #reqLen: Int32Array;
  /** Per slot: the offset of its READY answer in the response half (−1: in the slot). */
  readonly #respOff: Int32Array;

  private constructor(mapping: ShmMapping, helper: Helper, sizes: AgentRingSizes) {
    super(mapping, helper, sizes);
    this.agentPid = this.words[HEADER_WORD.agentPid];
    this.#spill = new SpillAllocator(this.spillHalf);
    this.#reqOff = new Int32Array(sizes.slots).fill(-1);
    this.#reqLen = new Int32Array(sizes.slots);
    this.#respOff = new Int32Array(sizes.slots).fill(-1);
  }

  /**
   * Maps agent `name`'s ring and checks it: NOT_FOUND when no agent of this user has that name
   * or its process is gone; HANDSHAKE naming what is wrong when the directory, the record or the
   * ring fails a check (another user's, not sealed, another size, not a ring). `peek` (an agent
   * starting) skips the checks that the agent still runs.
   */
  static async open(name: string, helper?: Helper, peek = false): Promise<AgentRingPort> {
    const uid = await effectiveUid();
    let dir: string;
    try {
      dir = agentDirectory(uid, false);
    } catch (e) {
      if (e instanceof VerbusError && e.code === "NOT_FOUND") {
        throw new VerbusError("NOT_FOUND", `no agent "${name}" on this host (${e.message})`);
      }
      throw e;
    }
    const record = readAgentRecord(dir, name);
    if (!record) {
      throw new VerbusError(
        "NOT_FOUND",
        `no agent "${name}" on this host (${dir} has no record of it)`,
      );
    }
    const gone = () =>
      new VerbusError(
        "NOT_FOUND",
        `agent "${name}" is not running (its record in ${dir} names pid ${record.pid}, ` +
          "which exited)",
      );
    if (!peek && !processAlive(record.pid)) throw gone();
    const shm = `/proc/${record.pid}/fd/${record.fd}`;
    let mapping: ShmMapping;
    try {
      mapping = await ShmMapping.openSealed(record.pid, record.fd, record.size, `agent "${name}"`);
    } catch (e) {
      if (e instanceof VerbusError && e.code === "NATIVE_CALL" && !processAlive(record.pid)) {
        throw gone();
      }
      throw e;
    }
    const size = record.size;
    const h = new Int32Array(mapping.bytes.buffer, mapping.bytes.byteOffset, 64);
    const sizes: AgentRingSizes = {
      entries: h[HEADER_WORD.entries],
      producers: h[HEADER_WORD.producers],
      slots: h[HEADER_WORD.slots],
      slotBytes: h[HEADER_WORD.slotBytes],
      spillBytes: h[HEADER_WORD.spillBytes],
    };
    const fail = (why: string): never => {
      mapping.close();
      throw new VerbusError("HANDSHAKE", `agent "${name}" (${shm}): ${why}`);
    };
    if (Atomics.load(h, HEADER_WORD.magic) !== MAGIC || h[HEADER_WORD.version] !== VERSION) {
      fail("not a verbus agent ring");
    }
    try {
      checkSizes(sizes);
    } catch (e) {
      fail((e as Error).message);
    }
    if (areas(sizes).total !== size) fail(`${size} bytes, its header says ${areas(sizes).total}`);
    if (h[HEADER_WORD.agentPid] !== record.pid) {
      fail(`its header names pid ${h[HEADER_WORD.agentPid]}`);
    }
    if (!peek && h[HEADER_WORD.state] !== STATE_READY) fail("the agent closed it");
    return new AgentRingPort(mapping, helper ?? await loadHelper(), sizes);
  }

  /** Takes a free table entry (OWNER … pid) and frees its slots. FULL when all are taken. */
  attach(): void {
    const w = this.words;
    for (let p = 0; p < this.sizes.producers; p++) {
      if (Atomics.compareExchange(w, this.tableWord(p), 0, pid) !== 0) continue;
      this.#index = p;
      for (let k = 0; k < this.sizes.slots; k++) Atomics.store(w, this.slotWord(p, k), SLOT.FREE);
      return;
    }
    throw new VerbusError(
      "FULL",
      `agent ring ${this.mapping.name}: all ${this.sizes.producers} producer entries are taken`,
    );
  }

  /**
   * Where to write slot k's request record of `bytes` (default: the slot's data area): the slot
   * when it fits, else a range of this producer's spill area (null when none is free now; a record
   * past {@link maxRecord} never fits).
   */
  area(k: number, bytes = this.slotData): Uint8Array | null {
    this.#freeSpill(k);
    if (bytes <= this.slotData) return this.slotArea(this.#index, k);
    const off = this.#spill.alloc(bytes);
    if (off < 0) return null;
    this.#reqOff[k] = off;
    this.#reqLen[k] = bytes;
    return this.spillView(this.#index, 0, off, bytes);
  }

  #freeSpill(k: number): void {
    if (this.#reqOff[k] < 0) return;
    this.#spill.free(this.#reqOff[k], this.#reqLen[k]);
    this.#reqOff[k] = -1;
  }

  /** Bytes of this producer's request spill ranges in use (tests, stats). */
  get spillInUse(): number {
    return this.#spill.usedBytes;
  }

  /**
   * Posts slot k holding `length` bytes: length, then POSTED, then the ring descriptor, then the
   * agent's doorbell. Returns false when the ring is FULL (the slot is FREE again).
   */
  post(k: number, length: number, seq: number): boolean {
    const w = this.words, sw = this.slotWord(this.#index, k);
    Atomics.store(w, sw + 1, seq);
    Atomics.store(w, sw + 2, length);
    this.markSpill(sw, this.#reqOff[k]);
    Atomics.store(w, sw, SLOT.POSTED);
    const desc = 1 + this.#index * this.sizes.slots + k;
    for (;;) {
      const pos = this.ring.claim();
      if (pos === RING_FULL) {
        // Ring the agent all the same: a head word someone scribbled on looks full (or
        // impossible) to every producer, and only the agent's drain rewrites it.
        this.bump(HEADER_WORD.doorbell, HEADER_WORD.sleeping);
        // Withdraw the slot unless the agent took it already (a scribbled entry named it).
        if (Atomics.compareExchange(w, sw, SLOT.POSTED, SLOT.FREE) === SLOT.POSTED) return false;
        break;
      }
      if (this.ring.publish(pos, desc)) break;
      if (Atomics.load(w, sw) !== SLOT.POSTED) break; // LOST, but the agent has it anyway
    }
    this.#ringAgent();
    return true;
  }

  /**
   * Moves the agent's doorbell; the agent is woken (if it sleeps) once for the rings of this
   * turn, at its end: a burst of calls costs one wake-up.
   */
  #ringAgent(): void {
    Atomics.add(this.words, HEADER_WORD.doorbell, 1);
    if (!this.#wakeOwed) {
      this.#wakeOwed = true;
      queueMicrotask(this.#wakeAgent);
    }
  }

  /** Posts made this turn owe the agent one wake-up ({@link post}). */
  #wakeOwed = false;
  readonly #wakeAgent = (): void => {
    this.#wakeOwed = false;
    if (!this.#closed) this.wakeIfSleeping(HEADER_WORD.doorbell, HEADER_WORD.sleeping);
  };

  /** Wake-ups of the agent this producer owes for posts of this turn: 0 or 1 (tests). */
  get wakesOwed(): number {
    return this.#wakeOwed ? 1 : 0;
  }

  /** Slot k's response length when READY (−1 otherwise; bounds-checked, spilled or not). */
  ready(k: number): number {
    const w = this.words, sw = this.slotWord(this.#index, k);
    if (Atomics.load(w, sw) !== SLOT.READY) return -1;
    const len = Atomics.load(w, sw + 2);
    const off = this.spilledAt(sw, len);
    this.#respOff[k] = off;
    if (off === -1) return 0; // a spilled answer outside the response half: unreadable
    if (off >= 0) return len;
    return len >= 0 && len <= this.slotData ? len : 0;
  }

  /**
   * Slot k's response, after {@link ready}: a view whose first `length` bytes are the answer (an
   * answer in the slot comes as the slot's whole data area, the same view every time); valid
   * until {@link release}.
   */
  response(k: number, length: number): Uint8Array {
    const off = this.#respOff[k];
    return off >= 0 ? this.spillView(this.#index, 1, off, length) : this.slotArea(this.#index, k);
  }

  /** Gives slot k back to this producer (READY → FREE) and frees its request spill range. */
  release(k: number): void {
    this.#freeSpill(k);
    const spilled = this.#respOff[k] >= 0;
    this.#respOff[k] = -1;
    Atomics.store(this.words, this.slotWord(this.#index, k), SLOT.FREE);
    // A spilled answer consumed frees room in the response half, which an agent holding answers
    // for want of room waits for: ring its doorbell once the slot is FREE (the agent frees the
    // range when it sees FREE), woken at the end of this turn if it sleeps.
    if (spilled && !this.#closed) this.#ringAgent();
  }

  /** This producer's doorbell (pass to {@link wait}). */
  doorbell(): number {
    return Atomics.load(this.words, this.tableWord(this.#index) + 1);
  }

  /** Sleeps until the agent answers (doorbell moves past `seen`) or `timeoutMs`. */
  wait(seen: number, timeoutMs: number): Promise<boolean> {
    const t = this.tableWord(this.#index);
    return this.park(t + 1, t + 2, seen, timeoutMs);
  }

  /**
   * Blocks this thread until the agent answers (doorbell moves past `seen`) or `us` µs pass (at
   * most 100 ms); true when it answered. For short waits: the thread's event loop waits too.
   */
  nap(seen: number, us: number): boolean {
    const t = this.tableWord(this.#index);
    return this.napOn(t + 1, t + 2, seen, Math.max(1, Math.min(100_000, Math.round(us))));
  }

  /** Why the agent cannot answer any more (closed, exited, replaced), or null while it runs. */
  agentGone(): string | null {
    const w = this.words;
    if (Atomics.load(w, HEADER_WORD.state) === STATE_CLOSED) {
      return `agent (pid ${this.agentPid}) closed its ring`;
    }
    if (!processAlive(this.agentPid)) return `agent (pid ${this.agentPid}) exited`;
    return null;
  }

  /** Leaves the table (the agent frees the entry once nothing of ours runs) and unmaps. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#index >= 0) {
      Atomics.compareExchange(this.words, this.tableWord(this.#index), pid, OWNER_LEAVING);
    }
    this.unmap();
  }

  /** Test seam: claims a ring position and never publishes it (a producer dying mid-write). */
  claimAndStall(): number {
    return this.ring.claim();
  }

  /** Test seam: publishes any descriptor at a claimed position (hostile producers). */
  publishRawForTest(pos: number, desc: number): boolean {
    return this.ring.publish(pos, desc);
  }

  /**
   * Test seam: posts slot k as if its record of `length` bytes were spilled at `offset` of the
   * request half — any numbers (a hostile producer's spill descriptor).
   */
  postSpillRawForTest(k: number, offset: number, length: number): boolean {
    const sw = this.slotWord(this.#index, k);
    Atomics.store(this.words, sw + 4, offset | 0);
    Atomics.store(this.words, sw + 3, 1);
    Atomics.store(this.words, sw + 2, length | 0);
    Atomics.store(this.words, sw, SLOT.POSTED);
    const pos = this.ring.claim();
    const ok = pos !== -1 && this.ring.publish(pos, 1 + this.#index * this.sizes.slots + k);
    this.bump(HEADER_WORD.doorbell, HEADER_WORD.sleeping);
    return ok;
  }

  /** Test seam: the whole mapping (hostile producers scribble on it). */
  get rawWords(): Int32Array {
    return this.words;
  }
}
