/**
 * Writes requests into the server's region, client side. A request goes in three steps, each a
 * one-sided write through the fabric: the payload (EAGER/LAZY: request and attachment into the
 * slot's inline area; BULK: gathered in staging, then one scatter-gather write into an extent the
 * client allocated in the server's BULK area — or, on a fabric whose `write` copies from any
 * memory (shm), written straight from the caller's bytes into that extent, one copy), then the
 * descriptor body, then — in its own write — the descriptor's state word READY (state-last
 * publication). Before the first use of a slot higher than any used so far, the server's scan
 * limit is widened.
 *
 * Doorbells are coalesced: a post leaves the doorbell owed and rings it from a microtask (or
 * from the session's next progress round, whichever comes first), so the calls a burst of
 * resolved callers submits in one turn share one flush and one kick; `cork`/`uncork` defers it
 * explicitly across a batch.
 *
 * Ownership and threading: one writer per client session, on its JS thread. The descriptor
 * scratch and the scatter-gather list are preallocated; an EAGER/LAZY post allocates nothing.
 * The caller's `request` / `attachment` are copied (or posted) before `post` returns.
 * @module
 */
import { type FabricEndpoint, OK } from "../../../transport/fabric.ts";
import { BulkAllocator } from "../../region/bulk_allocator.ts";
import { DESC_WORDS, FLAG_BULK, FLAG_PREFER_LAZY, READY, REQ } from "../../region/descriptors.ts";
import { CONTROL, type RegionLayout } from "../../region/layout.ts";
import type { ClientCallOptions } from "../../client/client_options.ts";
import type { ClientSlot } from "./client_slots.ts";
import { metaBlockBound, MetaBlockEncoder } from "../meta_block.ts";
import type { StagingArea } from "./staging_area.ts";

const EMPTY = new Uint8Array(0);

/** What a request says besides its bytes. The caller fills one (reusable) record per post. */
export interface RequestHeader {
  /** Method index from the server's hello, or `METHOD_RECLAIM`. */
  method: number;
  /** Ask the server to answer by object reference (LAZY) when the answer is large. */
  preferLazy: boolean;
  /** The call's timeout in ms (0 = none). */
  timeoutMs: number;
  /** brpc `log_id` (0 = none). */
  logId: number | bigint;
  /** Bytes of the metadata block last prepared with {@link RequestWriter.prepareMeta} (0 = none). */
  metaBytes: number;
}

/** See the module documentation. */
export class RequestWriter {
  readonly #endpoint: FabricEndpoint;
  readonly #server: RegionLayout;
  readonly #staging: StagingArea;
  /** The server's BULK area, allocated by this client (the server only checks bounds). */
  readonly bulkArea: BulkAllocator;
  /** Descriptor scratch: words 1.. are written as the body, then word 0 (state) alone. */
  readonly #desc = new Uint32Array(DESC_WORDS);
  readonly #descBody = new Uint8Array(this.#desc.buffer, 4);
  readonly #gather: Uint8Array[] = [EMPTY, EMPTY];
  /** 1 + the highest slot the server was told to scan. */
  #scanLimit = 0;
  /** While corked, posts defer the doorbell: {@link uncork} rings it once for all of them. */
  #corked = 0;
  #doorbellOwed = false;
  #ringScheduled = false;
  readonly #ringFromMicrotask = () => {
    this.#ringScheduled = false;
    if (this.#corked === 0) this.ringOwed();
  };
  /** Where doorbells rung and BULK requests written without staging are counted (the session's stats). */
  readonly #stats: { doorbells: number; bulkDirect: number };
  /** The request metadata blocks (headers, request_id), one at a time. */
  readonly #metaBlock = new MetaBlockEncoder();
  /** The largest block the server takes (both sides derive it from its slot size). */
  readonly metaBound: number;

  constructor(
    endpoint: FabricEndpoint,
    server: RegionLayout,
    staging: StagingArea,
    stats: { doorbells: number; bulkDirect: number } = { doorbells: 0, bulkDirect: 0 },
  ) {
    this.#endpoint = endpoint;
    this.#stats = stats;
    this.#server = server;
    this.#staging = staging;
    this.metaBound = metaBlockBound(server.config.slotSize);
    this.bulkArea = new BulkAllocator(
      Math.max(64, server.bulk.size),
      64,
      Math.max(1, server.config.slots),
    );
  }

  /**
   * Reserves `bytes` in the server's BULK area and as much staging for slot `slot`; false (and
   * nothing reserved) when either has no room now, or LAZY reads are waiting for staging.
   */
  reserveBulk(slot: ClientSlot, bytes: number): boolean {
    if (this.#staging.waiting > 0) return false; // LAZY reads wait for staging: they go first
    const bulkOffset = this.bulkArea.alloc(bytes);
    if (bulkOffset < 0) return false;
    const stagingOffset = this.#staging.alloc(bytes);
    if (stagingOffset < 0) {
      this.bulkArea.free(bulkOffset);
      return false;
    }
    slot.bulkOffset = bulkOffset;
    slot.stagingOffset = stagingOffset;
    return true;
  }

  /**
   * Encodes the metadata block of a call with `options` (the next post writes it: encode right
   * before posting): its bytes, 0 for none, or minus its size when it exceeds {@link metaBound}
   * (the call must go over TCP).
   */
  prepareMeta(options: ClientCallOptions): number {
    return this.#metaBlock.request(options, this.metaBound);
  }

  /**
   * Posts the request of slot `index` (BULK when `reserveBulk` gave it an extent) and rings the
   * server's doorbell. Returns the fabric status: OK, FULL (retry later) or FAILED.
   */
  post(
    index: number,
    slot: ClientSlot,
    header: RequestHeader,
    request: Uint8Array,
    attachment: Uint8Array,
  ): number {
    const ep = this.#endpoint, d = this.#desc, bulk = slot.bulkOffset >= 0;
    let offset: number, entries = 0, st: number;
    if (bulk && ep.writesFromAnyMemory === true) {
      // One copy, straight from the caller's bytes (e.g. an agent producer's spill area) into the
      // server's BULK extent; the staging extent reserved with it stays unused until release.
      offset = this.#server.bulk.offset + slot.bulkOffset;
      entries = attachment.length ? 2 : 1;
      st = request.length ? ep.write(0, offset, request, 0) : OK;
      if (st === OK && attachment.length) st = ep.write(0, offset + request.length, attachment, 0);
      this.#stats.bulkDirect++;
    } else if (bulk) {
      const at = this.#staging.regionOffset(slot.stagingOffset), local = ep.local;
      const split = at + request.length;
      local.set(request, at);
      local.set(attachment, split);
      this.#gather[0] = local.subarray(at, split);
      this.#gather[1] = local.subarray(split, split + attachment.length);
      entries = attachment.length ? 2 : 1;
      offset = this.#server.bulk.offset + slot.bulkOffset;
      st = ep.writeSg(0, offset, this.#gather, entries, 0);
    } else {
      offset = this.#server.slotLocal.offset + index * this.#server.config.slotSize;
      st = request.length ? ep.write(0, offset, request, 0) : OK;
      if (st === OK && attachment.length) st = ep.write(0, offset + request.length, attachment, 0);
    }
    const metaBytes = header.metaBytes;
    if (st === OK && metaBytes > 0) { // the block ends the slot's inline area (BULK leaves it free)
      const slotEnd = this.#server.slotLocal.offset + (index + 1) * this.#server.config.slotSize;
      st = ep.write(0, slotEnd - metaBytes, this.#metaBlock.view(), 0);
    }
    if (st !== OK) return st;
    d[REQ.meta] = metaBytes;
    d[REQ.seq] = slot.seq;
    d[REQ.method] = header.method;
    d[REQ.flags] = (bulk ? FLAG_BULK : 0) | (header.preferLazy ? FLAG_PREFER_LAZY : 0);
    d[REQ.offset] = offset;
    d[REQ.length] = request.length;
    d[REQ.attach] = attachment.length;
    d[REQ.timeout] = header.timeoutMs > 0 ? Math.min(header.timeoutMs, 0xffffffff) : 0;
    d[REQ.sg] = entries;
    const logId = header.logId;
    if (typeof logId === "bigint") {
      d[REQ.logLo] = Number(logId & 0xffff_ffffn);
      d[REQ.logHi] = Number((logId >> 32n) & 0xffff_ffffn);
    } else {
      d[REQ.logLo] = logId >>> 0;
      d[REQ.logHi] = Math.floor(logId / 0x1_0000_0000) >>> 0;
    }
    if (index >= this.#scanLimit) { // first use of a slot this high: widen the server's scan first
      this.#scanLimit = index + 1;
      st = ep.writeU32(0, this.#server.control.offset + CONTROL.scanLimit, this.#scanLimit, 0);
      if (st !== OK) return st;
    }
    const at = this.#server.requestRing.offset + index * DESC_WORDS * 4;
    st = ep.write(0, at + 4, this.#descBody, 0);
    if (st === OK) st = ep.writeU32(0, at, READY, 0); // state last, in its own write
    if (st === OK) {
      this.#doorbellOwed = true;
      if (this.#corked === 0 && !this.#ringScheduled) {
        this.#ringScheduled = true;
        queueMicrotask(this.#ringFromMicrotask);
      }
    }
    return st;
  }

  /** Rings the doorbell if a post since the last ring owes it (not while corked). */
  ringOwed(): void {
    if (this.#doorbellOwed && this.#corked === 0) this.#ring();
  }

  #ring(): void {
    this.#doorbellOwed = false;
    this.#stats.doorbells++;
    this.#endpoint.flush();
    this.#endpoint.kick();
  }

  /** Defers the doorbell of the posts that follow until the matching {@link uncork}. Nests. */
  cork(): void {
    this.#corked++;
  }

  /** Ends a {@link cork}; the outermost one rings one doorbell for every post made meanwhile. */
  uncork(): void {
    if (this.#corked > 0 && --this.#corked === 0 && this.#doorbellOwed) this.#ring();
  }
}
