/**
 * The client side of one fabric session: the async pipeline (`submit` / `progress` / `poll` /
 * `wait`, and `call` on top) over the session region. A call takes a free slot, writes its payload
 * (EAGER/LAZY: into the slot's inline area; BULK: scatter-gather from staging into space the
 * client allocated in the server's BULK area), then the descriptor body, then the state word.
 * `progress()` reaps fabric completions, picks up READY responses, reads LAZY objects out of the
 * server's pool (one-sided read, generation checked), sends RECLAIMs in batches and refreshes the
 * server's control-page snapshot every `refreshEvery` calls. A slot returns to FREE only after
 * its result was consumed and every completion for it was reaped.
 *
 * Threading: one JS thread. Buffers handed to `submit` are copied before it returns.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import {
  Completions,
  type FabricEndpoint,
  FAILED,
  FULL,
  OK,
  SIGNALED,
} from "../../transport/fabric.ts";
import { RpcError } from "../errors.ts";
import { BulkAllocator } from "../region/bulk_allocator.ts";
import {
  DESC_WORDS,
  FLAG_BULK,
  FLAG_PREFER_LAZY,
  KIND_INLINE,
  KIND_OBJECT,
  METHOD_RECLAIM,
  READY,
  REQ,
  RESP,
} from "../region/descriptors.ts";
import { CONTROL, type RegionLayout, SESSION_CLOSED } from "../region/layout.ts";
import { OBJECT_HEADER_BYTES, OBJECT_OVERHEAD_BYTES, verifyObject } from "../region/object_pool.ts";
import { Telemetry, type TelemetrySnapshot, telemetryView } from "../region/telemetry.ts";
import type { CallPath } from "../selector.ts";

const dec = new TextDecoder();
const EMPTY = new Uint8Array(0);
/** wr_id of the control-page snapshot read. */
const SNAPSHOT_WR = 0x1f_ffff;
/** Error status the server uses for "no room, retry elsewhere" (brpc EOVERCROWDED). */
const EOVERCROWDED = 1011;

/** The outcome of a fabric call. */
export interface FabricResult {
  response: Uint8Array;
  attachment: Uint8Array;
  /** The path the call really took (EAGER, LAZY or BULK). */
  path: CallPath;
}

/** A call in flight on the fabric. */
export interface PendingCall {
  readonly id: number;
  readonly promise: Promise<FabricResult>;
  /** Set once settled (poll() reads it). */
  result?: FabricResult;
  error?: unknown;
}

interface Slot {
  seq: number;
  busy: boolean;
  call:
    | (PendingCall & {
      resolve(r: FabricResult): void;
      reject(e: unknown): void;
      path: CallPath;
      deadline: number;
      what: number;
    })
    | null;
  internal: boolean;
  bulkOff: number;
  stagingOff: number;
  readLen: number;
  object: number;
  generation: number;
  respLen: number;
  attLen: number;
}

/** What a client session needs. */
export interface ClientSessionInit {
  endpoint: FabricEndpoint;
  server: RegionLayout;
  client: RegionLayout;
  /** "service/method" → index, from the server hello. */
  methods: readonly string[];
  /** Refresh the server's control-page snapshot every N calls (0 = never). */
  refreshEvery: number;
  /** Called when the session fails (fabric error or a violating peer). */
  onFail(reason: string): void;
}

/** One fabric session, client side. */
export class ClientSession {
  readonly #ep: FabricEndpoint;
  readonly #s: RegionLayout;
  readonly #c: RegionLayout;
  readonly #methods = new Map<string, number>();
  readonly #slots: Slot[];
  readonly #free: Int32Array;
  #nFree: number;
  readonly #busy: Int32Array;
  #nBusy = 0;
  readonly #resp: Int32Array;
  readonly #bulk: BulkAllocator;
  readonly #staging: BulkAllocator;
  readonly #stagingBase: number;
  readonly #desc = new Uint32Array(DESC_WORDS);
  readonly #descBytes = new Uint8Array(this.#desc.buffer, 4);
  readonly #cq = new Completions(256);
  readonly #sg: Uint8Array[] = [EMPTY, EMPTY];
  readonly #reclaims: Uint32Array;
  #nReclaims = 0;
  readonly #snapshotView: Uint8Array;
  #snapshot: TelemetrySnapshot | null = null;
  #snapshotPending = false;
  #callsSinceRefresh = 0;
  readonly #refreshEvery: number;
  #failed: string | null = null;
  #seen = 0;
  #activity = 0;
  #polls = 0;
  #scanLimit = 0;
  #nextDeadline = Infinity;
  readonly #ctl: Int32Array;
  readonly #onFail: (r: string) => void;
  /** Object-lifecycle hooks (the `--lifecycle-*` demos and tests): the last LAZY reference, and
   * whether to leave it unreclaimed (so the server's TTL sweep must free it). */
  readonly lifecycle = { lastObject: -1, lastGeneration: 0, skipReclaim: false };
  /** Counters for stats. */
  readonly stats = { submitted: 0, completed: 0, lazyReads: 0, reclaimsSent: 0, staleObjects: 0 };

  constructor(init: ClientSessionInit) {
    this.#ep = init.endpoint;
    this.#s = init.server;
    this.#c = init.client;
    init.methods.forEach((m, i) => this.#methods.set(m, i));
    const n = this.#c.config.slots;
    this.#slots = Array.from({ length: n }, () => ({
      seq: 0,
      busy: false,
      call: null,
      internal: false,
      bulkOff: -1,
      stagingOff: -1,
      readLen: 0,
      object: 0,
      generation: 0,
      respLen: 0,
      attLen: 0,
    }));
    this.#free = new Int32Array(n);
    for (let i = 0; i < n; i++) this.#free[i] = n - 1 - i;
    this.#nFree = n;
    this.#busy = new Int32Array(n);
    const local = this.#ep.local, rr = this.#c.responseRing;
    this.#ctl = new Int32Array(local.buffer, local.byteOffset + this.#c.control.offset, 16);
    this.#resp = new Int32Array(local.buffer, local.byteOffset + rr.offset, rr.size >> 2);
    this.#bulk = new BulkAllocator(Math.max(64, this.#s.bulk.size), 64, Math.max(1, n));
    const st = this.#c.staging;
    // The first 4 KiB of staging receive the server's control page; the rest is allocated.
    this.#snapshotView = local.subarray(st.offset, st.offset + 4096);
    this.#stagingBase = st.offset + 4096;
    this.#staging = new BulkAllocator(Math.max(64, st.size - 4096), 64, Math.max(1, n));
    this.#reclaims = new Uint32Array(Math.max(2, Math.floor(this.#s.config.slotSize / 4) & ~1));
    this.#refreshEvery = init.refreshEvery;
    this.#onFail = init.onFail;
  }

  /** True once the session failed; every call then goes over TCP. */
  get failed(): boolean {
    return this.#failed !== null;
  }

  /** Calls in flight (including internal RECLAIMs). */
  get inflight(): number {
    return this.#nBusy;
  }

  /** The last control-page snapshot of the server, or null before the first refresh. */
  get snapshot(): TelemetrySnapshot | null {
    return this.#snapshot;
  }

  /** RECLAIM references queued but not yet sent. */
  get pendingReclaims(): number {
    return this.#nReclaims / 2;
  }

  /** True while a control-page snapshot read is in flight. */
  get snapshotPending(): boolean {
    return this.#snapshotPending;
  }

  /** The fabric endpoint (for the progress loop's idle wait). */
  get endpoint(): FabricEndpoint {
    return this.#ep;
  }

  /** The negotiated layouts of both regions (tests and tools). */
  get layouts(): { server: RegionLayout; client: RegionLayout } {
    return { server: this.#s, client: this.#c };
  }

  /** The method index of "service/method", or -1 when the server did not list it. */
  methodIndex(service: string, method: string): number {
    return this.#methods.get(`${service}/${method}`) ?? -1;
  }

  /** Inline bytes a slot holds (request and response bodies). */
  get slotSize(): number {
    return this.#c.config.slotSize;
  }

  /**
   * Starts a call. Returns the pending call, or FULL (no slot / no room: retry after progress)
   * or FAILED (the fabric is down: use TCP). `request`/`attachment` are copied before return.
   */
  submit(
    method: number,
    request: Uint8Array,
    attachment: Uint8Array,
    path: "EAGER" | "LAZY" | "BULK",
    timeoutMs: number,
    logId: number | bigint = 0,
  ): PendingCall | typeof FULL | typeof FAILED {
    if (this.#failed !== null) return FAILED;
    if (this.#ep.failed) {
      this.fail(`fabric failed: ${this.#ep.failureReason ?? "unknown reason"}`);
      return FAILED;
    }
    if (Atomics.load(this.#ctl, CONTROL.state >> 2) === SESSION_CLOSED) {
      this.fail("the server closed the session");
      return FAILED;
    }
    const total = request.length + attachment.length;
    const bulk = path === "BULK" || total > this.#s.config.slotSize;
    if (this.#nFree === 0) return FULL;
    let bulkOff = -1, stOff = -1;
    if (bulk) {
      bulkOff = this.#bulk.alloc(total);
      if (bulkOff < 0) return FULL;
      stOff = this.#staging.alloc(total);
      if (stOff < 0) {
        this.#bulk.free(bulkOff);
        return FULL;
      }
    }
    const i = this.#free[--this.#nFree];
    const slot = this.#slots[i];
    slot.seq = (slot.seq + 1) >>> 0;
    slot.busy = true;
    slot.internal = false;
    slot.bulkOff = bulkOff;
    slot.stagingOff = stOff;
    this.#busy[this.#nBusy++] = i;
    let resolve!: (r: FabricResult) => void, reject!: (e: unknown) => void;
    const promise = new Promise<FabricResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    const deadline = timeoutMs > 0 ? performance.now() + timeoutMs : Infinity;
    if (deadline < this.#nextDeadline) this.#nextDeadline = deadline;
    const call = {
      id: i + slot.seq * 0x10000,
      promise,
      resolve,
      reject,
      path: bulk ? "BULK" as CallPath : path,
      deadline,
      what: method,
    };
    slot.call = call;
    const st = this.#post(
      i,
      slot,
      method,
      request,
      attachment,
      bulk,
      path === "LAZY",
      timeoutMs,
      logId,
    );
    if (st !== OK) {
      this.#release(i);
      slot.call = null;
      if (st === FAILED) this.fail("fabric post failed");
      return st === FULL ? FULL : FAILED;
    }
    this.stats.submitted++;
    if (this.#refreshEvery > 0 && ++this.#callsSinceRefresh >= this.#refreshEvery) {
      this.refreshSnapshot();
    }
    return call;
  }

  #post(
    i: number,
    slot: Slot,
    method: number,
    request: Uint8Array,
    attachment: Uint8Array,
    bulk: boolean,
    lazy: boolean,
    timeoutMs: number,
    logId: number | bigint = 0,
  ): number {
    const ep = this.#ep, d = this.#desc;
    let offset: number, sg = 0, st: number;
    if (bulk) {
      const local = ep.local, at = this.#stagingBase + slot.stagingOff;
      local.set(request, at);
      local.set(attachment, at + request.length);
      this.#sg[0] = local.subarray(at, at + request.length);
      this.#sg[1] = local.subarray(at + request.length, at + request.length + attachment.length);
      sg = attachment.length ? 2 : 1;
      offset = this.#s.bulk.offset + slot.bulkOff;
      st = ep.writeSg(0, offset, this.#sg, sg, 0);
    } else {
      offset = this.#s.slotLocal.offset + i * this.#s.config.slotSize;
      st = request.length ? ep.write(0, offset, request, 0) : OK;
      if (st === OK && attachment.length) st = ep.write(0, offset + request.length, attachment, 0);
    }
    if (st !== OK) return st;
    d[REQ.seq] = slot.seq;
    d[REQ.method] = method;
    d[REQ.flags] = (bulk ? FLAG_BULK : 0) | (lazy ? FLAG_PREFER_LAZY : 0);
    d[REQ.offset] = offset;
    d[REQ.length] = request.length;
    d[REQ.attach] = attachment.length;
    d[REQ.timeout] = timeoutMs > 0 ? Math.min(timeoutMs, 0xffffffff) : 0;
    d[REQ.sg] = sg;
    if (typeof logId === "bigint") {
      d[REQ.logLo] = Number(logId & 0xffff_ffffn);
      d[REQ.logHi] = Number((logId >> 32n) & 0xffff_ffffn);
    } else {
      d[REQ.logLo] = logId >>> 0;
      d[REQ.logHi] = Math.floor(logId / 0x1_0000_0000) >>> 0;
    }
    if (i >= this.#scanLimit) { // first use of a slot this high: widen the server's scan first
      this.#scanLimit = i + 1;
      st = ep.writeU32(0, this.#s.control.offset + CONTROL.scanLimit, this.#scanLimit, 0);
      if (st !== OK) return st;
    }
    const at = this.#s.requestRing.offset + i * DESC_WORDS * 4;
    st = ep.write(0, at + 4, this.#descBytes, 0);
    if (st === OK) st = ep.writeU32(0, at, READY, 0); // state last, in its own write
    if (st === OK) {
      ep.flush();
      ep.kick();
    }
    return st;
  }

  /**
   * Work progress() did that completed no call (a LAZY read posted, whose completion a later
   * progress() reaps), since the last call; resets it. The progress loop counts it as work so it
   * does not go to sleep with such a completion pending.
   */
  takeActivity(): number {
    const n = this.#activity;
    this.#activity = 0;
    return n;
  }

  /** The doorbell value the last progress() started from (idle waits sleep until it moves). */
  get seenDoorbell(): number {
    return this.#seen;
  }

  /** Reaps completions and responses; returns how many calls completed. */
  progress(): number {
    if (this.#failed !== null) return 0;
    if (this.#ep.failed) {
      this.fail(`fabric failed: ${this.#ep.failureReason ?? "unknown reason"}`);
      return 0;
    }
    this.#seen = this.#ep.doorbell();
    if (Atomics.load(this.#ctl, CONTROL.state >> 2) === SESSION_CLOSED) {
      this.fail("the server closed the session");
      return 0;
    }
    let done = 0;
    const n = this.#ep.poll(this.#cq);
    for (let k = 0; k < n; k++) done += this.#completion(this.#cq.wrId[k], this.#cq.status[k]);
    for (let b = 0; b < this.#nBusy && this.#failed === null; b++) {
      const i = this.#busy[b];
      if (Atomics.load(this.#resp, i * DESC_WORDS + RESP.state) !== READY) continue;
      const before = this.#nBusy;
      done += this.#response(i);
      if (this.#nBusy < before) b--; // slot i was swapped out of the busy list
    }
    if (this.#nReclaims > 0 && this.#nFree > 0 && this.#failed === null) this.#sendReclaims();
    if ((++this.#polls & 63) === 0 && this.#nBusy > 0 && performance.now() > this.#nextDeadline) {
      this.#expire();
    }
    return done;
  }

  /** Milliseconds until the earliest call deadline (capped by `max`): bounds an idle sleep. */
  msToDeadline(max: number): number {
    if (this.#nextDeadline === Infinity) return max;
    return Math.max(1, Math.min(max, Math.ceil(this.#nextDeadline - performance.now())));
  }

  /** Rejects calls whose deadline passed (the progress loop calls this after an idle sleep). */
  checkDeadlines(): void {
    if (this.#nBusy > 0 && performance.now() > this.#nextDeadline) this.#expire();
  }

  /** Rejects calls whose deadline passed; their slots free when the late answers arrive. */
  #expire(): void {
    const now = performance.now();
    let next = Infinity;
    for (let b = 0; b < this.#nBusy; b++) {
      const call = this.#slots[this.#busy[b]].call;
      if (!call) continue;
      if (call.deadline <= now) {
        this.#slots[this.#busy[b]].call = null;
        call.reject(new VerbusError("TIMEOUT", `call to method #${call.what} timed out (fabric)`));
      } else if (call.deadline < next) next = call.deadline;
    }
    this.#nextDeadline = next;
  }

  #response(i: number): number {
    const r = this.#resp, b = i * DESC_WORDS, slot = this.#slots[i];
    const seq = r[b + RESP.seq] >>> 0,
      status = r[b + RESP.status] >>> 0,
      kind = r[b + RESP.kind] >>> 0;
    const len = r[b + RESP.length] >>> 0,
      off = r[b + RESP.offset] >>> 0,
      att = r[b + RESP.attach] >>> 0;
    Atomics.store(r, b + RESP.state, 0);
    if (seq !== slot.seq) {
      return this.#violation(`slot ${i}: response seq ${seq}, expected ${slot.seq}`);
    }
    const call = slot.call;
    if (status !== 0 || kind === KIND_INLINE) {
      const at = this.#c.slotLocal.offset + i * this.#c.config.slotSize;
      if (kind !== KIND_INLINE || off !== at || len + att > this.#c.config.slotSize) {
        return this.#violation(
          `slot ${i}: inline response [${off}, +${len + att}) is not inside its slot`,
        );
      }
      const local = this.#ep.local;
      if (status !== 0) {
        const text = dec.decode(local.subarray(off, off + len));
        this.#release(i);
        if (call) {
          call.reject(
            status === EOVERCROWDED ? new VerbusError("FULL", text) : new RpcError(status, text),
          );
        }
        return 1;
      }
      const response = local.slice(off, off + len),
        attachment = att ? local.slice(off + len, off + len + att) : EMPTY;
      this.#release(i);
      // Answered inline: the call was EAGER (even if it preferred LAZY), unless its request went BULK.
      if (call) {
        call.resolve({ response, attachment, path: call.path === "BULK" ? "BULK" : "EAGER" });
      }
      return 1;
    }
    if (kind !== KIND_OBJECT) return this.#violation(`slot ${i}: unknown response kind ${kind}`);
    const pool = this.#s.objectPool, size = OBJECT_OVERHEAD_BYTES + len + att;
    if (off < pool.offset || off + size > pool.offset + pool.size) {
      return this.#violation(
        `slot ${i}: object reference [${off}, +${size}) outside the object pool`,
      );
    }
    slot.object = r[b + RESP.object] >>> 0;
    slot.generation = r[b + RESP.generation] >>> 0;
    slot.respLen = len;
    slot.attLen = att;
    if (!call) { // abandoned (timed out): give the object back without reading it
      this.#queueReclaim(slot.object, slot.generation);
      this.#release(i);
      return 0;
    }
    const stOff = this.#staging.alloc(size);
    if (stOff < 0) {
      this.#queueReclaim(slot.object, slot.generation);
      this.#release(i);
      call.reject(new VerbusError("FULL", `no staging room for a ${size}-byte LAZY result`));
      return 1;
    }
    slot.stagingOff = stOff;
    slot.readLen = size;
    const at = this.#stagingBase + stOff;
    const st = this.#ep.read(i, this.#ep.local.subarray(at, at + size), off, SIGNALED);
    if (st !== OK) {
      this.#release(i);
      call.reject(new VerbusError("FABRIC", `LAZY read failed to post (status ${st})`));
      if (st === FAILED) this.fail("fabric read failed");
      return 1;
    }
    this.#ep.flush();
    this.stats.lazyReads++;
    this.#activity++; // not a completed call, but progress: the read's completion follows
    return 0;
  }

  #completion(wrId: number, status: number): number {
    if (wrId === SNAPSHOT_WR) {
      this.#snapshotPending = false;
      if (status === 0) {
        const v = this.#snapshotView;
        this.#snapshot = new Telemetry(telemetryView(v.buffer, v.byteOffset + CONTROL.telemetry))
          .snapshot();
      }
      return 0;
    }
    const i = wrId;
    const slot = this.#slots[i];
    if (!slot || !slot.busy || slot.readLen === 0) return 0;
    const call = slot.call;
    if (status !== 0) {
      this.#release(i);
      call?.reject(
        new VerbusError("FABRIC", `LAZY read completed with ${this.#ep.statusText(status)}`),
      );
      this.fail(`read completion error: ${this.#ep.statusText(status)}`);
      return 1;
    }
    const at = this.#stagingBase + slot.stagingOff;
    const bytes = this.#ep.local.subarray(at, at + slot.readLen);
    const total = slot.respLen + slot.attLen;
    this.lifecycle.lastObject = slot.object;
    this.lifecycle.lastGeneration = slot.generation;
    if (!this.lifecycle.skipReclaim) this.#queueReclaim(slot.object, slot.generation);
    if (!verifyObject(bytes, slot.generation, total)) {
      this.stats.staleObjects++;
      this.#release(i);
      call?.reject(
        new VerbusError(
          "FABRIC",
          `LAZY object ${slot.object} changed under the read (generation ${slot.generation})`,
        ),
      );
      return 1;
    }
    const data = OBJECT_HEADER_BYTES;
    const response = bytes.slice(data, data + slot.respLen);
    const attachment = slot.attLen ? bytes.slice(data + slot.respLen, data + total) : EMPTY;
    this.#release(i);
    // A BULK request keeps its name even when its answer came by reference.
    call?.resolve({ response, attachment, path: call.path === "BULK" ? "BULK" : "LAZY" });
    return 1;
  }

  #queueReclaim(object: number, generation: number): void {
    if (this.#nReclaims + 2 > this.#reclaims.length) this.#sendReclaims();
    if (this.#nReclaims + 2 > this.#reclaims.length) return; // no slot free: the TTL sweep frees it
    this.#reclaims[this.#nReclaims++] = object;
    this.#reclaims[this.#nReclaims++] = generation;
  }

  #sendReclaims(): void {
    if (this.#nFree === 0 || this.#nReclaims === 0) return;
    const payload = new Uint8Array(this.#reclaims.buffer, 0, this.#nReclaims * 4);
    const i = this.#free[--this.#nFree], slot = this.#slots[i];
    slot.seq = (slot.seq + 1) >>> 0;
    slot.busy = true;
    slot.internal = true;
    slot.call = null;
    this.#busy[this.#nBusy++] = i;
    const st = this.#post(i, slot, METHOD_RECLAIM, payload, EMPTY, false, false, 0);
    this.#nReclaims = 0;
    if (st !== OK) this.#release(i);
    else this.stats.reclaimsSent++;
  }

  /** Sends a RECLAIM of (object, generation) now — also a stale or repeated one (it is harmless). */
  reclaim(object: number, generation: number): void {
    this.#queueReclaim(object >>> 0, generation >>> 0);
    this.#sendReclaims();
  }

  /** Sends the queued RECLAIMs now (when a slot is free). */
  flushReclaims(): void {
    this.#sendReclaims();
  }

  /** Posts a one-sided read of the server's control page into staging. */
  refreshSnapshot(): void {
    this.#callsSinceRefresh = 0;
    if (this.#snapshotPending || this.#failed !== null) return;
    const st = this.#ep.read(SNAPSHOT_WR, this.#snapshotView, this.#s.control.offset, SIGNALED);
    if (st === OK) {
      this.#snapshotPending = true;
      this.#ep.flush();
    }
  }

  #release(i: number): void {
    const slot = this.#slots[i];
    if (!slot.busy) return;
    slot.busy = false;
    slot.call = null;
    slot.readLen = 0;
    if (slot.bulkOff >= 0) this.#bulk.free(slot.bulkOff);
    if (slot.stagingOff >= 0) this.#staging.free(slot.stagingOff);
    slot.bulkOff = slot.stagingOff = -1;
    for (let b = 0; b < this.#nBusy; b++) {
      if (this.#busy[b] === i) {
        this.#busy[b] = this.#busy[--this.#nBusy];
        break;
      }
    }
    this.#free[this.#nFree++] = i;
  }

  /** Forgets the caller of a call (it timed out); its slot frees when the answer arrives. */
  abandon(call: PendingCall): void {
    const i = call.id % 0x10000, slot = this.#slots[i];
    if (slot.busy && slot.call?.id === call.id) slot.call = null;
  }

  #violation(reason: string): number {
    this.fail(`server broke the protocol: ${reason}`);
    return 0;
  }

  /** Fails the session: every call in flight rejects; later calls go over TCP. Safe twice. */
  fail(reason: string): void {
    if (this.#failed !== null) return;
    this.#failed = reason;
    this.#ep.fail(reason);
    for (let b = this.#nBusy - 1; b >= 0; b--) {
      const slot = this.#slots[this.#busy[b]];
      slot.call?.reject(new VerbusError("FABRIC", `fabric session failed: ${reason}`));
      slot.call = null;
    }
    this.#onFail(reason);
  }

  /** Closes the session and its endpoint (calls in flight reject). Safe twice. */
  close(): void {
    if (this.#failed === null) {
      this.#failed = "closed";
      for (let b = this.#nBusy - 1; b >= 0; b--) {
        const slot = this.#slots[this.#busy[b]];
        slot.call?.reject(new VerbusError("FABRIC", "fabric session closed"));
        slot.call = null;
      }
    }
    this.#ep.close();
  }

  /** Free request slots right now (0 = a submit would return FULL). */
  get freeSlots(): number {
    return this.#nFree;
  }
}
