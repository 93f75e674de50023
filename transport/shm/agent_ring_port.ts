/**
 * A producer's side of the agent ring (layout: `agent_ring.ts`): maps the agent's object
 * (checking its header and that its agent runs), takes a table entry, and posts requests from its
 * own slots — length, then POSTED, then the ring descriptor, then the agent's doorbell.
 *
 * Threading: the producer's JS thread; its wait runs off-thread.
 * @module
 */
import { statSync } from "node:fs";
import { pid } from "node:process";
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import { loadHelper } from "../../ffi/helper.ts";
import type { AgentRingProducer, AgentRingSizes } from "../local_ring.ts";
import {
  agentObjectName,
  AgentRingBase,
  areas,
  checkSizes,
  H,
  MAGIC,
  OWNER_LEAVING,
  SLOT,
  STATE_CLOSED,
  STATE_READY,
  VERSION,
} from "./agent_ring.ts";
import { RING_FULL } from "./mpsc_ring.ts";
import { processAlive, ShmMapping } from "./shm_object.ts";

/** A producer's side: attached to one table entry, owning its K slots. */
export class AgentRingPort extends AgentRingBase implements AgentRingProducer {
  /** The agent's pid as its header says. */
  readonly agentPid: number;
  #index = -1;
  #closed = false;

  private constructor(mapping: ShmMapping, helper: Helper, sizes: AgentRingSizes) {
    super(mapping, helper, sizes);
    this.agentPid = this.words[H.agentPid];
  }

  /** Maps agent `name`'s object and checks its header (HANDSHAKE / NOT_FOUND naming what). */
  static async open(name: string, helper?: Helper, peek = false): Promise<AgentRingPort> {
    const shm = agentObjectName(name);
    let size = 0;
    try {
      size = statSync(`/dev/shm${shm}`).size;
    } catch {
      throw new VerbusError("NOT_FOUND", `no agent "${name}" on this host (${shm} does not exist)`);
    }
    if (size < 4096) {
      throw new VerbusError(
        "HANDSHAKE",
        `agent "${name}" (${shm}): ${size} bytes is no agent ring`,
      );
    }
    const mapping = await ShmMapping.open(shm, size);
    const h = new Int32Array(mapping.bytes.buffer, mapping.bytes.byteOffset, 64);
    const sizes: AgentRingSizes = {
      entries: h[H.entries],
      producers: h[H.producers],
      slots: h[H.slots],
      slotBytes: h[H.slotBytes],
    };
    const fail = (why: string): never => {
      mapping.close();
      throw new VerbusError("HANDSHAKE", `agent "${name}" (${shm}): ${why}`);
    };
    if (Atomics.load(h, H.magic) !== MAGIC || h[H.version] !== VERSION) {
      fail("not a verbus agent ring");
    }
    try {
      checkSizes(sizes);
    } catch (e) {
      fail((e as Error).message);
    }
    if (areas(sizes).total !== size) fail(`${size} bytes, its header says ${areas(sizes).total}`);
    if (!peek && h[H.state] !== STATE_READY) fail("the agent closed it");
    const agentPid = h[H.agentPid];
    if (!peek && !processAlive(agentPid)) {
      mapping.close();
      throw new VerbusError(
        "NOT_FOUND",
        `agent "${name}" is not running (its ring ${shm} is left by pid ${agentPid}, which exited)`,
      );
    }
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

  /** Slot k's data area, to write a request record into. */
  area(k: number): Uint8Array {
    return this.slotBytes(this.#index, k, this.slotData);
  }

  /**
   * Posts slot k holding `length` bytes: length, then POSTED, then the ring descriptor, then the
   * agent's doorbell. Returns false when the ring is FULL (the slot is FREE again).
   */
  post(k: number, length: number, seq: number): boolean {
    const w = this.words, sw = this.slotWord(this.#index, k);
    Atomics.store(w, sw + 1, seq);
    Atomics.store(w, sw + 2, length);
    Atomics.store(w, sw, SLOT.POSTED);
    const desc = 1 + this.#index * this.sizes.slots + k;
    for (;;) {
      const pos = this.ring.claim();
      if (pos === RING_FULL) {
        // Withdraw the slot unless the agent took it already (a scribbled entry named it).
        if (Atomics.compareExchange(w, sw, SLOT.POSTED, SLOT.FREE) === SLOT.POSTED) return false;
        break;
      }
      if (this.ring.publish(pos, desc)) break;
      if (Atomics.load(w, sw) !== SLOT.POSTED) break; // LOST, but the agent has it anyway
    }
    this.bump(H.doorbell, H.sleeping);
    return true;
  }

  /** Slot k's response length when READY (−1 otherwise; bounds-checked). */
  ready(k: number): number {
    const w = this.words, sw = this.slotWord(this.#index, k);
    if (Atomics.load(w, sw) !== SLOT.READY) return -1;
    const len = Atomics.load(w, sw + 2);
    return len >= 0 && len <= this.slotData ? len : 0;
  }

  /** Slot k's response bytes (valid until {@link release}). */
  response(k: number, length: number): Uint8Array {
    return this.slotBytes(this.#index, k, length);
  }

  /** Gives slot k back to this producer (READY → FREE). */
  release(k: number): void {
    Atomics.store(this.words, this.slotWord(this.#index, k), SLOT.FREE);
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

  /** Why the agent cannot answer any more (closed, exited, replaced), or null while it runs. */
  agentGone(): string | null {
    const w = this.words;
    if (Atomics.load(w, H.state) === STATE_CLOSED) {
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

  /** Test seam: the whole mapping (hostile producers scribble on it). */
  get rawWords(): Int32Array {
    return this.words;
  }
}
