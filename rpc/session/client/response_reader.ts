/**
 * Reads responses, client side. A READY response descriptor in slot i is checked before use
 * (its seq must echo the request's; every offset and length came from the server and must lie
 * inside the client's slot or the server's object pool — a violation fails the session), then:
 * - INLINE (EAGER, and every error answer): the body is copied out of the slot and the call
 *   settles at once. An error answer is never redone over TCP, whatever its code: the server
 *   took the request (it may have run the handler). An older server answers EOVERCROWDED
 *   `object pool full (N bytes)` when its object pool had no room for an answer it had run:
 *   that call fails with ERESPONSE saying so (not EOVERCROWDED, which callers — a cluster
 *   client among them — may read as "not run, try elsewhere"). A current server holds such an
 *   answer until it has room (`session_answers.ts`);
 * - OBJECT (LAZY): the object is read one-sided into staging (wr id = slot index); when that
 *   read completes, header and trailer generations are checked, the data copied out, the
 *   reference queued for RECLAIM, and the call settles. With no staging room now the read waits
 *   in a preallocated FIFO (one entry per slot) and is posted, in arrival order, as soon as reads
 *   in flight and BULK requests give staging back ({@link ResponseReader.postWaiting}); the
 *   object stays in the server's pool meanwhile (it is RECLAIMed only after the read; the server
 *   frees an unreclaimed object after its TTL, 30 s by default, and a read after that fails the
 *   call saying so). The server has run such a call: it is never redone over TCP. An answer
 *   larger than the whole staging area can never be read: that call fails (ERESPONSE, naming
 *   both sizes).
 * An answer's metadata block (response headers, trailers, error details; `meta_block.ts`) is
 * read with its descriptor; one too long or malformed fails that call only (PROTOCOL).
 * The slot is released once its result was copied out and no completion for it is outstanding.
 *
 * Ownership and threading: one reader per client session, on its JS thread. Results are fresh
 * copies the caller owns; an EAGER answer allocates only those copies and the result object.
 * @module
 */
import { VerbusError } from "../../../errors.ts";
import { type FabricEndpoint, FAILED, OK, SIGNALED } from "../../../transport/fabric.ts";
import { EOVERCROWDED, ERESPONSE, RpcError } from "../../errors.ts";
import {
  DESC_WORDS,
  FREE,
  KIND_INLINE,
  KIND_OBJECT,
  READY,
  RESP,
} from "../../region/descriptors.ts";
import type { RegionLayout } from "../../region/layout.ts";
import {
  OBJECT_HEADER_BYTES,
  OBJECT_OVERHEAD_BYTES,
  verifyObject,
} from "../../region/object_format.ts";
import { SLOT_FREE, type SlotTable } from "./client_slots.ts";
import type { ClientSessionStats } from "./fabric_call.ts";
import type { ObjectLifecycleProbe } from "./object_lifecycle_probe.ts";
import type { ReclaimBatcher } from "./reclaim_batcher.ts";
import type { StagingArea } from "./staging_area.ts";
import { copyOut } from "../copy_out.ts";
import { type MetaBlock, metaBlockBound, readMetaBlock } from "../meta_block.ts";
import { SlotQueue } from "./slot_queue.ts";
import { loadAcquire } from "../../../transport/word_order.ts";

const dec = new TextDecoder();
const EMPTY = new Uint8Array(0);
/** The text of an older server's EOVERCROWDED for an answer its object pool could not hold. */
const OLD_POOL_FULL = /^object pool full \(\d+ bytes\)$/;

/** What a {@link ResponseReader} works with (all owned by the session). */
export interface ResponseReaderInit {
  endpoint: FabricEndpoint;
  server: RegionLayout;
  client: RegionLayout;
  slots: SlotTable;
  staging: StagingArea;
  reclaims: ReclaimBatcher;
  lifecycle: ObjectLifecycleProbe;
  stats: ClientSessionStats;
  /** Slots of the session (bounds the LAZY reads that can wait for staging). */
  slotCount: number;
  /** Fails the whole session (a fabric error or a server that broke the protocol). */
  fail(reason: string): void;
}

/** See the module documentation. */
export class ResponseReader {
  readonly #endpoint: FabricEndpoint;
  readonly #server: RegionLayout;
  readonly #client: RegionLayout;
  readonly #slots: SlotTable;
  readonly #staging: StagingArea;
  readonly #reclaims: ReclaimBatcher;
  readonly #lifecycle: ObjectLifecycleProbe;
  readonly #stats: ClientSessionStats;
  readonly #fail: (reason: string) => void;
  /** The client's response ring, as u32 words (Int32 for Atomics). */
  readonly #ring: Int32Array;
  #readsPosted = 0;
  /** LAZY reads waiting for staging room, oldest first. */
  readonly #waiting: SlotQueue;
  /** The largest metadata block an answer may carry (the server derives it the same way). */
  readonly #metaBound: number;

  constructor(init: ResponseReaderInit) {
    this.#endpoint = init.endpoint;
    this.#server = init.server;
    this.#client = init.client;
    this.#slots = init.slots;
    this.#staging = init.staging;
    this.#reclaims = init.reclaims;
    this.#lifecycle = init.lifecycle;
    this.#stats = init.stats;
    this.#fail = init.fail;
    this.#metaBound = metaBlockBound(init.server.config.slotSize);
    this.#waiting = new SlotQueue(init.slotCount);
    const local = init.endpoint.local, ring = init.client.responseRing;
    this.#ring = new Int32Array(local.buffer, local.byteOffset + ring.offset, ring.size >> 2);
  }

  /** True when the response descriptor of slot `i` is READY. */
  isReady(i: number): boolean {
    return loadAcquire(this.#ring, i * DESC_WORDS + RESP.state) === READY;
  }

  /**
   * LAZY reads posted since the last call (work that completed no call yet: its completion
   * follows); resets the count.
   */
  takeReadsPosted(): number {
    const n = this.#readsPosted;
    this.#readsPosted = 0;
    return n;
  }

  /** Consumes the READY response of slot `i`; returns how many calls it completed (0 or 1). */
  read(i: number): number {
    const r = this.#ring, b = i * DESC_WORDS, slot = this.#slots.slot(i);
    const seq = r[b + RESP.seq] >>> 0,
      status = r[b + RESP.status] >>> 0,
      kind = r[b + RESP.kind] >>> 0;
    const len = r[b + RESP.length] >>> 0,
      off = r[b + RESP.offset] >>> 0,
      att = r[b + RESP.attach] >>> 0,
      metaBytes = r[b + RESP.meta] >>> 0;
    r[b + RESP.state] = FREE; // plain: the server writes it again only after our next request's atomic publication
    if (seq !== slot.seq) {
      return this.#violation(`slot ${i}: response seq ${seq}, expected ${slot.seq}`);
    }
    if (metaBytes !== 0 && slot.pending) {
      const inline = status !== 0 || kind === KIND_INLINE;
      const slotSize = this.#client.config.slotSize;
      const got = inline && len + att + metaBytes > slotSize
        ? `its answer and metadata block (${len + att} + ${metaBytes} bytes) overlap`
        : readMetaBlock(
          this.#endpoint.local,
          this.#client.slotLocal.offset + (i + 1) * slotSize,
          metaBytes,
          this.#metaBound,
        );
      if (typeof got === "string") return this.#badMeta(i, inline, got);
      slot.answerMeta = got;
    }
    if (status !== 0 || kind === KIND_INLINE) {
      return this.#readInline(i, status, kind, off, len, att);
    }
    if (kind !== KIND_OBJECT) return this.#violation(`slot ${i}: unknown response kind ${kind}`);
    const pool = this.#server.objectPool, size = OBJECT_OVERHEAD_BYTES + len + att;
    if (off < pool.offset || off + size > pool.offset + pool.size) {
      return this.#violation(
        `slot ${i}: object reference [${off}, +${size}) outside the object pool`,
      );
    }
    slot.object = r[b + RESP.object] >>> 0;
    slot.generation = r[b + RESP.generation] >>> 0;
    slot.objectOffset = off;
    slot.waitedSince = 0;
    slot.responseBytes = len;
    slot.attachmentBytes = att;
    if (!slot.pending) { // abandoned (timed out): give the object back without reading it
      this.#reclaims.queue(slot.object, slot.generation);
      this.#slots.release(i);
      return 0;
    }
    // A BULK request's source extent is done with (the server answered, so it has the payload):
    // give it back before taking the read's, which would otherwise overwrite (and leak) it.
    if (slot.stagingOffset >= 0) {
      this.#staging.free(slot.stagingOffset);
      slot.stagingOffset = -1;
    }
    const capacity = this.#staging.capacity;
    if (size > capacity) { // no wait can make room: the call fails (the server ran it: no redo)
      this.#reclaims.queue(slot.object, slot.generation);
      this.#slots.reject(
        i,
        new RpcError(
          ERESPONSE,
          `the LAZY answer (${size} bytes with its object framing) is larger than this client's ` +
            `staging area (${capacity} bytes; raise region.stagingSize): the server ran the ` +
            `call, it is not redone`,
        ),
      );
      this.#slots.release(i);
      return 1;
    }
    if (this.#waiting.length === 0) {
      const stagingOffset = this.#staging.alloc(size);
      if (stagingOffset >= 0) return this.#postRead(i, stagingOffset, size);
    }
    // No room now (or older reads wait): wait in order; the object stays in the server's pool.
    this.#waiting.push(i); // (cannot be full: one entry per slot, a slot is queued at most once)
    this.#staging.waiting = this.#waiting.length;
    slot.waitedSince = performance.now();
    this.#stats.lazyWaits++;
    this.#readsPosted++; // progress: the read is posted once staging comes back
    return 0;
  }

  /**
   * Posts the LAZY reads waiting for staging room, oldest first, while room is there (the
   * session calls it every progress round, after completions gave staging back); a waiting call
   * whose caller gave up gives its object back unread. Returns how many calls it completed.
   */
  postWaiting(): number {
    const q = this.#waiting;
    if (q.length === 0) return 0;
    let done = 0;
    while (q.length > 0) {
      const i = q.peek(), slot = this.#slots.slot(i);
      if (!slot.pending) { // abandoned (timed out) while it waited
        q.shift();
        this.#reclaims.queue(slot.object, slot.generation);
        this.#slots.release(i);
        continue;
      }
      const size = OBJECT_OVERHEAD_BYTES + slot.responseBytes + slot.attachmentBytes;
      const stagingOffset = this.#staging.alloc(size);
      if (stagingOffset < 0) break;
      q.shift();
      done += this.#postRead(i, stagingOffset, size);
    }
    this.#staging.waiting = q.length;
    return done;
  }

  /** Posts slot `i`'s LAZY read into the staging extent at `stagingOffset`; returns 0 or 1 (failed). */
  #postRead(i: number, stagingOffset: number, size: number): number {
    const slot = this.#slots.slot(i);
    slot.stagingOffset = stagingOffset;
    slot.lazyReadBytes = size;
    const view = this.#staging.view(stagingOffset, size);
    const st = this.#endpoint.read(i, view, slot.objectOffset, SIGNALED);
    if (st !== OK) {
      this.#slots.reject(i, new VerbusError("FABRIC", `LAZY read failed to post (status ${st})`));
      this.#slots.release(i);
      if (st === FAILED) this.#fail("fabric read failed");
      return 1;
    }
    this.#endpoint.flush();
    this.#stats.lazyReads++;
    this.#readsPosted++; // not a completed call, but progress: the read's completion follows
    return 0;
  }

  /** An INLINE answer (or an error answer) in slot `i`'s area of the client region. */
  #readInline(
    i: number,
    status: number,
    kind: number,
    off: number,
    len: number,
    att: number,
  ): number {
    const slotSize = this.#client.config.slotSize;
    const at = this.#client.slotLocal.offset + i * slotSize;
    if (kind !== KIND_INLINE || off !== at || len + att > slotSize) {
      return this.#violation(
        `slot ${i}: inline response [${off}, +${len + att}) is not inside its slot`,
      );
    }
    const local = this.#endpoint.local, slots = this.#slots;
    if (status !== 0) {
      const text = dec.decode(local.subarray(off, off + len));
      // Never redone (the server took the call); an older server's "pool full" is not EOVERCROWDED.
      slots.reject(
        i,
        status === EOVERCROWDED && OLD_POOL_FULL.test(text)
          ? new RpcError(
            ERESPONSE,
            `the server ran the call but its object pool had no room for the answer (it ` +
              `answered EOVERCROWDED "${text}", as servers before at-most-once answers did); ` +
              `the call is not redone`,
          )
          : withMeta(new RpcError(status, text), slots.slot(i).answerMeta),
      );
      slots.release(i);
      return 1;
    }
    if (slots.slot(i).pending) {
      // Answered inline: the call was EAGER (even if it preferred LAZY), unless its request went BULK.
      const path = slots.slot(i).path === "BULK" ? "BULK" : "EAGER";
      if (!slots.toSink(i, local, off, len, att, path)) { // a sink copies it where it goes
        const response = copyOut(local, off, len),
          attachment = att ? copyOut(local, off + len, att) : EMPTY;
        slots.resolve(i, response, attachment, path);
      }
    }
    slots.release(i);
    return 1;
  }

  /**
   * The completion (fabric `status`, 0 = OK) of the LAZY read of slot `i`; returns how many calls
   * it completed. Ignores a wr id that is no slot with a read in flight.
   */
  readCompleted(i: number, status: number): number {
    const slot = this.#slots.slot(i);
    if (!slot || slot.state === SLOT_FREE || slot.lazyReadBytes === 0) return 0;
    if (status !== 0) {
      const text = this.#endpoint.statusText(status);
      this.#slots.reject(i, new VerbusError("FABRIC", `LAZY read completed with ${text}`));
      this.#slots.release(i);
      this.#fail(`read completion error: ${text}`);
      return 1;
    }
    const bytes = this.#staging.view(slot.stagingOffset, slot.lazyReadBytes);
    const total = slot.responseBytes + slot.attachmentBytes;
    this.#lifecycle.observe(slot.object, slot.generation);
    if (!this.#lifecycle.skipReclaim) this.#reclaims.queue(slot.object, slot.generation);
    if (!verifyObject(bytes, slot.generation, total)) {
      this.#stats.staleObjects++;
      const waited = slot.waitedSince > 0
        ? `; the read waited ${(performance.now() - slot.waitedSince).toFixed(0)} ms for ` +
          `staging room, and the server frees an unreclaimed object after its TTL ` +
          `(objectTtlMs): the server ran the call, it is not redone`
        : "";
      this.#slots.reject(
        i,
        new VerbusError(
          "FABRIC",
          `LAZY object ${slot.object} changed under the read (generation ${slot.generation})` +
            waited,
        ),
      );
      this.#slots.release(i);
      return 1;
    }
    const data = OBJECT_HEADER_BYTES;
    // A BULK request keeps its name even when its answer came by reference.
    const path = slot.path === "BULK" ? "BULK" : "LAZY";
    if (this.#slots.toSink(i, bytes, data, slot.responseBytes, slot.attachmentBytes, path)) {
      this.#slots.release(i);
      return 1;
    }
    const response = bytes.slice(data, data + slot.responseBytes);
    const attachment = slot.attachmentBytes
      ? bytes.slice(data + slot.responseBytes, data + total)
      : EMPTY;
    this.#slots.resolve(i, response, attachment, path);
    this.#slots.release(i);
    return 1;
  }

  /**
   * The answer in slot `i` came with a metadata block that is too long or does not decode: that
   * call fails (PROTOCOL, saying why); an object it referenced is given back; the session goes on.
   */
  #badMeta(i: number, inline: boolean, why: string): number {
    if (!inline) {
      const b = i * DESC_WORDS;
      this.#reclaims.queue(
        this.#ring[b + RESP.object] >>> 0,
        this.#ring[b + RESP.generation] >>> 0,
      );
    }
    this.#slots.reject(i, new VerbusError("PROTOCOL", `the server's answer (slot ${i}): ${why}`));
    this.#slots.release(i);
    return 1;
  }

  #violation(reason: string): number {
    this.#fail(`server broke the protocol: ${reason}`);
    return 0;
  }
}

/** `e` with the details, headers and trailers of the answer's metadata block (if it had one). */
function withMeta(e: RpcError, meta: MetaBlock | undefined): RpcError {
  if (meta !== undefined) {
    e.details = meta.errorDetails;
    e.userFields = meta.userFields;
    e.trailers = meta.trailers;
  }
  return e;
}
