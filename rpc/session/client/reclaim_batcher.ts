/**
 * Batches RECLAIMs, client side. Every LAZY object the client read (or abandoned) is given back to
 * the server by reference `(object id, generation)`; references are queued and sent together as
 * the payload of one RECLAIM request (method `METHOD_RECLAIM`, a list of u32 LE pairs) in a free
 * slot. A batch holds at most one inline slot of references; when the queue is full and no slot is
 * free, a reference is dropped — the server's TTL sweep frees that object. RECLAIM of a stale or
 * repeated reference is harmless (the server only counts it).
 *
 * Ownership and threading: one batcher per client session, on its JS thread. The queue is
 * preallocated; `queue` allocates nothing, `send` one payload view per batch.
 * @module
 */
import { OK } from "../../../transport/fabric.ts";
import { METHOD_RECLAIM } from "../../region/descriptors.ts";
import { SLOT_RECLAIM, type SlotTable } from "./client_slots.ts";
import type { ClientSessionStats } from "./fabric_call.ts";
import type { RequestHeader, RequestWriter } from "./request_writer.ts";

const EMPTY = new Uint8Array(0);
const RECLAIM_HEADER: RequestHeader = Object.freeze({
  method: METHOD_RECLAIM,
  preferLazy: false,
  timeoutMs: 0,
  logId: 0,
  metaBytes: 0,
});

/** See the module documentation. */
export class ReclaimBatcher {
  /** Queued references: object id, generation, object id, generation, … */
  readonly #refs: Uint32Array;
  #words = 0;
  readonly #slots: SlotTable;
  readonly #writer: RequestWriter;
  readonly #stats: ClientSessionStats;

  /** A batcher whose batches fit `slotSize` inline bytes (the server's slot size). */
  constructor(
    slotSize: number,
    slots: SlotTable,
    writer: RequestWriter,
    stats: ClientSessionStats,
  ) {
    this.#refs = new Uint32Array(Math.max(2, Math.floor(slotSize / 4) & ~1));
    this.#slots = slots;
    this.#writer = writer;
    this.#stats = stats;
  }

  /** References queued but not yet sent. */
  get pending(): number {
    return this.#words / 2;
  }

  /** Queues the reference `(object, generation)`; sends the batch first when it is full. */
  queue(object: number, generation: number): void {
    if (this.#words + 2 > this.#refs.length) this.send();
    if (this.#words + 2 > this.#refs.length) return; // no slot free: the TTL sweep frees it
    this.#refs[this.#words++] = object;
    this.#refs[this.#words++] = generation;
  }

  /** Posts the queued references as one RECLAIM request, when a slot is free. */
  send(): void {
    if (this.#words === 0 || this.#slots.freeCount === 0) return;
    const payload = new Uint8Array(this.#refs.buffer, 0, this.#words * 4);
    const i = this.#slots.take(SLOT_RECLAIM);
    const st = this.#writer.post(i, this.#slots.slot(i), RECLAIM_HEADER, payload, EMPTY);
    this.#words = 0;
    if (st !== OK) this.#slots.release(i);
    else this.#stats.reclaimsSent++;
  }
}
