/**
 * The transport-level entry to the same-host agent's shared-memory ring
 * (`transport/shm/agent_ring*.ts`, loaded on first use): the rpc layer reaches the ring only
 * through the interfaces and the two functions here, never through `transport/shm/` itself.
 * The ring carries opaque records; their format belongs to the rpc layer (`rpc/agent/`).
 *
 * Threading: one JS thread per side. Control path (create/open may allocate, await and throw);
 * the data-path methods allocate nothing.
 * @module
 */

/** The sizes of an agent's ring (fixed when the agent creates it). */
export interface AgentRingSizes {
  /** Ring entries (a power of two; at least producers × slots for no FULL under full load). */
  readonly entries: number;
  /** Producer table entries (processes that may be attached at once). */
  readonly producers: number;
  /** Slots per producer (its calls in flight through the agent). */
  readonly slots: number;
  /** Bytes per slot, its 16-byte header included (a power of two). */
  readonly slotBytes: number;
  /**
   * Bytes of each producer's spill area (a multiple of 8192; 0: none): records larger than a slot
   * go there, requests in its first half, responses in its second.
   */
  readonly spillBytes: number;
}

/** Preallocated output of {@link AgentRingHost.drain}; all arrays of one length. */
export interface DrainBuffers {
  readonly desc: Uint32Array;
  readonly producer: Uint32Array;
  readonly slot: Uint32Array;
  readonly length: Uint32Array;
}

/** The agent's side of the ring (the single consumer). */
export interface AgentRingHost {
  /** Where producers find the ring: the path of the agent's record file. */
  readonly name: string;
  readonly sizes: AgentRingSizes;
  /** Bytes a record (request or response) may have in a slot. */
  readonly slotData: number;
  /** The largest record: a slot's, or a spill half's when larger. */
  readonly maxRecord: number;
  /** Takes posted requests into `out`; returns how many (each must be answered). */
  drain(out: DrainBuffers, nowMs: number, reclaimMs: number): number;
  /**
   * A drained request (shared memory; valid until `respond`): a view whose first `length` bytes
   * are the record — it may be longer (a slot's whole data area).
   */
  request(producer: number, slot: number, length: number): Uint8Array;
  /**
   * Where to write a response of `bytes` (default: a slot's data area): the slot, or a range of
   * the producer's spill area when larger; null when it cannot fit now.
   */
  responseArea(producer: number, slot: number, bytes?: number): Uint8Array | null;
  /**
   * Publishes a response of `length` bytes (0: the request was rejected) and moves its
   * producer's doorbell; a sleeping producer is woken by the next {@link flushWakes}.
   */
  respond(producer: number, slot: number, length: number): void;
  /**
   * Wakes the sleeping producers answered since they were last woken (one syscall each at most);
   * with `maxDelayMs` > 0, a producer with most of its calls still running waits for a later
   * flush, up to that long (see the host's documentation). Returns how many it woke.
   */
  flushWakes(maxDelayMs?: number): number;
  /** Producers answered whose wake-up a {@link flushWakes} deferred. */
  readonly wakesDeferred: number;
  /** Frees the table entries of dead or departed producers (about once a second). */
  sweep(): void;
  /** True while producer entry `producer` is held by a live process. */
  producerLive(producer: number): boolean;
  /** Publishes how many answers the agent holds for want of spill room. */
  setHeld(n: number): void;
  doorbell(): number;
  /** Sleeps off-thread until a producer posts or `timeoutMs` passes. */
  wait(seen: number, timeoutMs: number): Promise<boolean>;
  wake(): void;
  /**
   * delivered, reclaimed, garbage, rejected, producersReclaimed, attached, recovered, spilled,
   * spillInUse, held.
   */
  counters(): Record<string, number>;
  /** Marks the ring CLOSED, unlinks and unmaps it. Safe twice. */
  close(): void;
}

/** A producer's side: one table entry and its slots. */
export interface AgentRingProducer {
  readonly sizes: AgentRingSizes;
  readonly slotData: number;
  /** The largest record: a slot's, or a spill half's when larger. */
  readonly maxRecord: number;
  readonly agentPid: number;
  /**
   * Where to write slot k's request record of `bytes` (default: the slot's data area): the slot,
   * or a range of this producer's spill area when larger; null when no range is free now.
   */
  area(slot: number, bytes?: number): Uint8Array | null;
  /** Posts slot k (`length` bytes); false: the ring is FULL (nothing was sent). */
  post(slot: number, length: number, seq: number): boolean;
  /** The response length of slot k when the agent answered it, else −1. */
  ready(slot: number): number;
  /** Slot k's answer: a view whose first `length` bytes are it (it may be longer). */
  response(slot: number, length: number): Uint8Array;
  /** Gives slot k back (after reading its response). */
  release(slot: number): void;
  doorbell(): number;
  /** Sleeps off-thread until the agent answers or `timeoutMs` passes. */
  wait(seen: number, timeoutMs: number): Promise<boolean>;
  /**
   * Blocks the calling thread (its event loop too) until the agent answers or `us` µs pass
   * (clamped to 1 µs – 100 ms); true when it answered. Woken like {@link wait}, without the
   * hand-off to another thread and back.
   */
  nap(seen: number, us: number): boolean;
  /** Why the agent cannot answer any more, or null while it runs. */
  agentGone(): string | null;
  counters(): Record<string, number>;
  /** Leaves the table and unmaps. Safe twice. */
  close(): void;
}

/** Creates agent `name`'s ring (replacing one a dead agent left). Throws LISTEN_FAILED if one runs. */
export async function createAgentRing(name: string, sizes: AgentRingSizes): Promise<AgentRingHost> {
  const m = await import("./agent_ring_host.ts");
  return await m.AgentRingHost.create(name, sizes);
}

/** Joins agent `name`'s ring as a producer. Throws NOT_FOUND (no agent), HANDSHAKE or FULL. */
export async function joinAgentRing(name: string): Promise<AgentRingProducer> {
  const m = await import("./agent_ring_port.ts");
  const port = await m.AgentRingPort.open(name);
  try {
    port.attach();
  } catch (e) {
    port.close();
    throw e;
  }
  return port;
}
