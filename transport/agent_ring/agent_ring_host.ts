/**
 * The agent's side of the agent ring (layout: `agent_ring.ts`): creates the sealed memfd and
 * publishes its record in this user's agent directory (`agent_directory.ts`), drains
 * posted requests — every descriptor, owner and length checked, a slot taken by CAS, a spilled
 * record's offset checked against its producer's request half —, answers them in the producers'
 * slots (a large answer in the producer's response half, allocated here), and sweeps: frees the
 * entries of dead or departed producers (and their response ranges), frees the response ranges
 * producers consumed, and re-enqueues descriptors a scribbler destroyed.
 *
 * Threading: the agent's JS thread; its wait runs off-thread.
 * @module
 */
import { join } from "node:path";
import { pid } from "node:process";
import { VerbusError } from "../../errors.ts";
import type { Helper } from "../../ffi/helper.ts";
import { loadHelper } from "../../ffi/helper.ts";
import type { AgentRingHost as HostApi, AgentRingSizes, DrainBuffers } from "./mod.ts";
import {
  agentDirectory,
  type AgentRecord,
  checkAgentName,
  publishAgentRecord,
  readAgentRecord,
  removeAgentRecord,
} from "./agent_directory.ts";
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
import { AgentRingPort } from "./agent_ring_port.ts";
import { RING_FULL } from "./mpsc_ring.ts";
import { effectiveUid, processAlive, ShmMapping } from "../shm/shm_object.ts";
import { SpillAllocator } from "./spill_allocator.ts";
import { ProducerWakes } from "./agent_wakes.ts";

/** The agent's side: creates the object, drains requests, answers them. */
export class AgentRingHost extends AgentRingBase implements HostApi {
  readonly name: string;
  readonly #inflight: Uint32Array;
  /** Per slot: the seq it was POSTED with at the last sweep (0: not POSTED then). */
  readonly #stuck: Int32Array;
  #recovered = 0;
  #rejected = 0;
  #producersReclaimed = 0;
  #closed = false;
  #scratch: Uint8Array | null = null;
  /** The producers owed a wake-up for answers published to them. */
  readonly #wakes: ProducerWakes;
  readonly #wakeProducer = (p: number): void => {
    const t = this.tableWord(p);
    this.wakeIfSleeping(t + 1, t + 2);
  };
  /** Per producer: its response half's ranges (agent-private bookkeeping). */
  readonly #spill: SpillAllocator[];
  /** Per slot (p × K + k): its request's spill offset, its answer's range (−1: none). */
  readonly #reqOff: Int32Array;
  readonly #respOff: Int32Array;
  readonly #respLen: Int32Array;
  #spilled = 0;

  /** The record this agent published (null: none, or removed on close). */
  #record: AgentRecord | null;

  private constructor(
    mapping: ShmMapping,
    helper: Helper,
    sizes: AgentRingSizes,
    /** The agent directory holding its record. */
    readonly dir: string,
    /** The agent's name. */
    readonly agentName: string,
    record: AgentRecord,
  ) {
    super(mapping, helper, sizes);
    this.#record = record;
    const n = sizes.producers * sizes.slots;
    this.#spill = Array.from({ length: sizes.producers }, () => new SpillAllocator(this.spillHalf));
    this.#reqOff = new Int32Array(n).fill(-1);
    this.#respOff = new Int32Array(n).fill(-1);
    this.#respLen = new Int32Array(n);
    this.name = join(dir, `agent-${agentName}.json`);
    this.#inflight = new Uint32Array(sizes.producers);
    this.#stuck = new Int32Array(sizes.producers * sizes.slots);
    this.#wakes = new ProducerWakes(sizes.producers);
  }

  /**
   * Creates agent `name`'s ring and publishes its record. A record left by a dead agent is
   * replaced; one whose agent still runs is an error (LISTEN_FAILED naming its pid), and so is an
   * agent directory another user made (naming the owner). The header, the producer table and the
   * ring entries — what every producer touches — are reserved at creation; the slots and spill
   * areas stay sparse, like a session region (a memfd is beyond a full /dev/shm's reach, sealed
   * against shrinking, and reserving them would commit every producer's slots and spill area).
   */
  static async create(name: string, sizes: AgentRingSizes): Promise<AgentRingHost> {
    checkSizes(sizes);
    checkAgentName(name);
    const helper = await loadHelper();
    const dir = agentDirectory(await effectiveUid(), true);
    const a = areas(sizes);
    const mapping = await ShmMapping.createSealed(`verbus-agent-${name}`, a.total, a.slots);
    const record: AgentRecord = { pid, fd: mapping.fd, size: mapping.size };
    const host = new AgentRingHost(mapping, helper, sizes, dir, name, record);
    const w = host.words;
    w[HEADER_WORD.version] = VERSION;
    w[HEADER_WORD.agentPid] = pid;
    w[HEADER_WORD.entries] = sizes.entries;
    w[HEADER_WORD.producers] = sizes.producers;
    w[HEADER_WORD.slots] = sizes.slots;
    w[HEADER_WORD.slotBytes] = sizes.slotBytes;
    w[HEADER_WORD.spillBytes] = sizes.spillBytes;
    w[HEADER_WORD.epoch] = crypto.getRandomValues(new Int32Array(1))[0];
    host.ring.resetAsConsumer();
    w[HEADER_WORD.state] = STATE_READY;
    Atomics.store(w, HEADER_WORD.magic, MAGIC); // published last
    try {
      await host.#publish();
    } catch (e) {
      host.#record = null; // never published: nothing of ours to remove
      host.close();
      throw e;
    }
    return host;
  }

  /** Publishes the record, replacing one whose agent is gone (LISTEN_FAILED if it runs). */
  async #publish(): Promise<void> {
    const { dir, agentName: name } = this;
    const record = this.#record!;
    if (publishAgentRecord(dir, name, record)) return;
    let old: AgentRecord | null = null;
    try {
      old = readAgentRecord(dir, name);
    } catch { /* garbled: replaced below */ }
    if (old !== null && processAlive(old.pid)) {
      const running = await AgentRingPort.open(name, this.helper, true).then(
        (port) => {
          const gone = port.agentGone();
          port.close();
          return gone === null;
        },
        () => false, // its record names no ring: stale
      );
      if (running) {
        throw new VerbusError("LISTEN_FAILED", `agent "${name}" already runs (pid ${old.pid})`);
      }
    }
    removeAgentRecord(dir, name, old ?? undefined);
    if (!publishAgentRecord(dir, name, record)) {
      throw new VerbusError(
        "LISTEN_FAILED",
        `agent "${name}": another agent of that name published its record at the same time`,
      );
    }
  }

  /**
   * Takes up to `out.producer.length` posted requests: fills `out` (producer, slot, length) and
   * returns how many. Each is TAKEN: answer it with {@link respond}. Bad descriptors and records
   * are counted and dropped (a bad length is answered with length 0).
   */
  drain(out: DrainBuffers, nowMs: number, reclaimMs: number): number {
    const k = this.sizes.slots, w = this.words;
    const got = this.ring.drain(out.desc, this.sizes.producers * k, nowMs, reclaimMs);
    let n = 0;
    for (let i = 0; i < got; i++) {
      const d = out.desc[i] - 1, p = (d / k) | 0, s = d - p * k;
      const sw = this.slotWord(p, s);
      if (
        Atomics.load(w, this.tableWord(p)) <= 0 ||
        Atomics.compareExchange(w, sw, SLOT.POSTED, SLOT.TAKEN) !== SLOT.POSTED
      ) {
        this.#rejected++; // not attached, not posted, or posted twice
        continue;
      }
      const len = Atomics.load(w, sw + 2);
      this.#inflight[p]++;
      this.#freeAnswer(p, d); // posted again: the producer consumed the last answer
      const off = this.spilledAt(sw, len);
      this.#reqOff[d] = off;
      if (off === -1 || len <= 0 || (off === -2 && len > this.slotData)) {
        this.#rejected++; // a length past the slot, or a spill range outside the request half
        this.respond(p, s, 0);
        continue;
      }
      out.producer[n] = p;
      out.slot[n] = s;
      out.length[n] = len;
      n++;
    }
    this.#publishCounters();
    return n;
  }

  /**
   * A drained slot's request, in it or spilled: a view whose first `length` bytes are the record
   * (one in the slot comes as the slot's whole data area, the same view every time); valid until
   * {@link respond}.
   */
  request(p: number, k: number, length: number): Uint8Array {
    const off = this.#reqOff[p * this.sizes.slots + k];
    return off >= 0 ? this.spillView(p, 0, off, length) : this.slotArea(p, k);
  }

  /**
   * Where to write the answer of TAKEN slot (p, k), `bytes` long (default: the slot's whole data
   * area): the slot when it fits, else a range of p's response half (the ranges p consumed are
   * freed first when none is free); null when it cannot fit. After close: scratch.
   */
  responseArea(p: number, k: number, bytes = this.slotData): Uint8Array | null {
    // A call still running when the agent closed answers into scratch, never into the unmapping.
    if (this.#closed) {
      const n = Math.max(bytes, this.slotData);
      if ((this.#scratch?.length ?? 0) < n) this.#scratch = new Uint8Array(n);
      return this.#scratch!.subarray(0, n);
    }
    const i = p * this.sizes.slots + k;
    this.#freeAnswer(p, i);
    if (bytes <= this.slotData) return this.slotArea(p, k);
    let off = this.#spill[p].alloc(bytes);
    if (off < 0 && this.#freeConsumed(p) > 0) off = this.#spill[p].alloc(bytes);
    if (off < 0) return null;
    this.#respOff[i] = off;
    this.#respLen[i] = bytes;
    return this.spillView(p, 1, off, bytes);
  }

  /** Frees the response range of slot i (of producer p), if it has one. */
  #freeAnswer(p: number, i: number): void {
    if (this.#respOff[i] < 0) return;
    this.#spill[p].free(this.#respOff[i], this.#respLen[i]);
    this.#respOff[i] = -1;
  }

  /** Frees p's response ranges its producer consumed (slot FREE or posted again); how many. */
  #freeConsumed(p: number): number {
    let n = 0;
    for (let k = 0; k < this.sizes.slots; k++) {
      const i = p * this.sizes.slots + k, st = Atomics.load(this.words, this.slotWord(p, k));
      if (this.#respOff[i] >= 0 && (st === SLOT.FREE || st === SLOT.POSTED)) {
        this.#freeAnswer(p, i);
        n++;
      }
    }
    return n;
  }

  /** Publishes the response of slot (p, k): length, then READY, then its doorbell; the wake-up waits for {@link flushWakes}. */
  respond(p: number, k: number, length: number): void {
    if (this.#closed) return;
    const w = this.words, sw = this.slotWord(p, k);
    if (this.#inflight[p] > 0) this.#inflight[p]--;
    if (Atomics.load(w, sw) !== SLOT.TAKEN) return; // scribbled: the producer is broken anyway
    const i = p * this.sizes.slots + k;
    if (length === 0) this.#freeAnswer(p, i);
    if (this.#respOff[i] >= 0) Atomics.store(w, HEADER_WORD.counters + 7, ++this.#spilled);
    this.markSpill(sw, this.#respOff[i]);
    Atomics.store(w, sw + 2, length);
    Atomics.store(w, sw, SLOT.READY);
    Atomics.add(w, this.tableWord(p) + 1, 1); // the doorbell moves now: no wake-up can be lost
    this.#wakes.answered(p);
  }

  /**
   * Wakes the producers answered since they were last woken that sleep: one futex wake per
   * producer, however many of its calls were answered. `maxDelayMs` > 0 batches further
   * (`agent_wakes.ts`): a producer with most of its calls still running here waits for a later
   * flush, up to that long (flush with 0 before sleeping). A producer polling its slots sees its
   * answers at once either way. Returns how many producers it woke or looked at.
   */
  flushWakes(maxDelayMs = 0): number {
    return this.#wakes.flush(maxDelayMs, this.#inflight, this.#wakeProducer);
  }

  /** Producers answered and not yet woken (their wake-up waits for a later {@link flushWakes}). */
  get wakesDeferred(): number {
    return this.#wakes.deferred;
  }

  /**
   * True while producer entry p is held by a live process (false: free, left, or its process
   * died) — the agent drops what it holds for a producer that is gone.
   */
  producerLive(p: number): boolean {
    const owner = Atomics.load(this.words, this.tableWord(p));
    return owner > 0 && processAlive(owner);
  }

  /** Publishes how many answers the agent holds for want of spill room (the `held` counter). */
  setHeld(n: number): void {
    if (!this.#closed) Atomics.store(this.words, HEADER_WORD.counters + 9, n);
  }

  /** Gives back the table entries of dead or departed producers with nothing running. */
  sweep(): void {
    const w = this.words;
    let attached = 0;
    for (let p = 0; p < this.sizes.producers; p++) {
      const t = this.tableWord(p), owner = Atomics.load(w, t);
      if (owner === 0) continue;
      if (owner < 0 && owner !== OWNER_LEAVING) {
        Atomics.compareExchange(w, t, owner, 0); // a value no producer writes: garbage
        continue;
      }
      if (owner > 0 && processAlive(owner)) {
        attached++;
        this.#recover(p);
        this.#freeConsumed(p);
        continue;
      }
      if (this.#inflight[p] > 0) continue; // its calls still run: the entry stays taken
      if (Atomics.compareExchange(w, t, owner, 0) === owner) {
        if (owner > 0) this.#producersReclaimed++;
        this.#respOff.fill(-1, p * this.sizes.slots, (p + 1) * this.sizes.slots);
        this.#spill[p].reset(); // the next producer of entry p starts with a free response half
      }
    }
    Atomics.store(w, HEADER_WORD.counters + 5, attached);
    Atomics.store(w, HEADER_WORD.counters + 8, this.#spill.reduce((s, a) => s + a.usedBytes, 0));
    this.#publishCounters();
  }

  /**
   * Re-enqueues producer p's slots that stayed POSTED (same seq) since the last sweep: their
   * descriptor was lost (a scribbled entry). Taking a slot is a CAS, so a late duplicate of a
   * descriptor is rejected, never run twice.
   */
  #recover(p: number): void {
    const w = this.words, k = this.sizes.slots;
    for (let s = 0; s < k; s++) {
      const i = p * k + s, sw = this.slotWord(p, s);
      if (Atomics.load(w, sw) !== SLOT.POSTED) {
        this.#stuck[i] = 0;
        continue;
      }
      const seq = Atomics.load(w, sw + 1) | 1; // never 0 (0 = not seen)
      if (this.#stuck[i] !== seq) {
        this.#stuck[i] = seq;
        continue;
      }
      this.#stuck[i] = 0;
      const pos = this.ring.claim();
      if (pos !== RING_FULL && this.ring.publish(pos, i + 1)) this.#recovered++;
    }
  }

  #publishCounters(): void {
    const w = this.words, c = this.ring.counters;
    Atomics.store(w, HEADER_WORD.counters, c.delivered);
    Atomics.store(w, HEADER_WORD.counters + 1, c.reclaimed);
    Atomics.store(w, HEADER_WORD.counters + 2, c.garbage);
    Atomics.store(w, HEADER_WORD.counters + 3, this.#rejected);
    Atomics.store(w, HEADER_WORD.counters + 4, this.#producersReclaimed);
    Atomics.store(w, HEADER_WORD.counters + 6, this.#recovered);
  }

  /** The agent's doorbell (pass to {@link wait}). */
  doorbell(): number {
    return Atomics.load(this.words, HEADER_WORD.doorbell);
  }

  /** Sleeps until a producer posts (doorbell moves past `seen`) or `timeoutMs`. */
  wait(seen: number, timeoutMs: number): Promise<boolean> {
    return this.park(HEADER_WORD.doorbell, HEADER_WORD.sleeping, seen, timeoutMs);
  }

  /** Wakes this agent's own wait (shutdown). */
  wake(): void {
    this.bump(HEADER_WORD.doorbell, HEADER_WORD.sleeping);
  }

  /**
   * Marks the ring CLOSED (producers see it at once), removes its record, closes its memfd and
   * unmaps it. Safe twice.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    Atomics.store(this.words, HEADER_WORD.state, STATE_CLOSED);
    for (let p = 0; p < this.sizes.producers; p++) {
      this.bump(this.tableWord(p) + 1, this.tableWord(p) + 2);
    }
    if (this.#record) removeAgentRecord(this.dir, this.agentName, this.#record);
    this.#record = null;
    this.mapping.unlink();
    this.unmap();
  }
}
