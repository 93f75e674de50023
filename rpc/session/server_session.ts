/**
 * The server side of one fabric session: takes READY requests out of its request ring (at most
 * `batchBudget` per round), validates every field the client wrote (offsets, lengths, slot and
 * method indices — a bad one fails this session only, with a logged reason), copies the payload
 * out of shared memory, dispatches it through the same {@link Dispatcher} as TCP, and writes each
 * answer into the client's response ring: inline when it fits the slot (EAGER), as an object
 * reference into the object pool otherwise or when the client prefers LAZY (LAZY). RECLAIMs free
 * objects; a TTL sweep frees what nobody reclaimed.
 *
 * Threading: one JS thread (the server's). Nothing touches region memory after close().
 * @module
 */
import type { FabricEndpoint } from "../../transport/fabric.ts";
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import { EOVERCROWDED } from "../errors.ts";
import type { Dispatcher, Logger, ResponseSink, ServerCall } from "../protocol/dispatch.ts";
import type { RpcMeta } from "../protocol/rpc_meta.ts";
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
  TAKEN,
} from "../region/descriptors.ts";
import { CONTROL, type RegionLayout, SESSION_CLOSED } from "../region/layout.ts";
import { FULL as POOL_FULL, OBJECT_HEADER_BYTES, ObjectPool } from "../region/object_pool.ts";
import {
  PRESSURE_OBJPOOL,
  PRESSURE_RING,
  TELEMETRY,
  Telemetry,
  TELEMETRY_PATH,
  telemetryView,
} from "../region/telemetry.ts";

const enc = new TextEncoder();

const EMPTY = new Uint8Array(0);

/** What a server session needs. */
export interface ServerSessionInit {
  id: number;
  endpoint: FabricEndpoint;
  server: RegionLayout;
  client: RegionLayout;
  dispatcher: Dispatcher;
  /** Method table sent in the hello: index → [service, method]. */
  methods: readonly (readonly [string, string])[];
  peer: NetAddress;
  batchBudget: number;
  largeThreshold: number;
  ttlMs: number;
  logger: Logger;
  /** Simulated pressure flags for this session's control page (fault injection). */
  pressure?: "ring" | "objpool";
}

/** One fabric session, server side. */
export class ServerSession implements ResponseSink {
  readonly id: number;
  readonly peer: NetAddress;
  readonly #abort = new AbortController();
  readonly #ep: FabricEndpoint;
  readonly #s: RegionLayout;
  readonly #c: RegionLayout;
  readonly #ring: Int32Array;
  readonly #ctl: Int32Array;
  readonly #dispatcher: Dispatcher;
  readonly #methods: ServerSessionInit["methods"];
  readonly #pool: ObjectPool;
  readonly #telemetry: Telemetry;
  readonly #budget: number;
  readonly #largeThreshold: number;
  readonly #logger: Logger;
  /** Response descriptor scratch (words 1..15 are written, then the state word). */
  readonly #desc = new Uint32Array(DESC_WORDS);
  readonly #descBytes = new Uint8Array(this.#desc.buffer, 4);
  /** Per method index: the last frozen request meta (see #take). */
  readonly #requestMeta: (RpcMeta["request"] | undefined)[] = [];
  #cursor = 0;
  #taken = 0;
  #kickPending = false;
  /** True while poll() runs: answers written then share one kick at its end. */
  #inPoll = false;
  #closed: string | null = null;
  #seenDoorbell = 0;

  constructor(init: ServerSessionInit) {
    this.id = init.id;
    this.peer = init.peer;
    this.#ep = init.endpoint;
    this.#s = init.server;
    this.#c = init.client;
    this.#dispatcher = init.dispatcher;
    this.#methods = init.methods;
    this.#budget = init.batchBudget;
    this.#largeThreshold = init.largeThreshold;
    this.#logger = init.logger;
    const local = this.#ep.local;
    const rr = this.#s.requestRing;
    this.#ring = new Int32Array(local.buffer, local.byteOffset + rr.offset, rr.size >> 2);
    this.#ctl = new Int32Array(local.buffer, local.byteOffset + this.#s.control.offset, 16);
    const op = this.#s.objectPool;
    this.#pool = new ObjectPool(local.subarray(op.offset, op.offset + op.size), {
      slabSize: this.#s.config.objectSlabSize,
      slabs: Math.max(1, this.#s.config.objectSlabs),
      ttlMs: init.ttlMs,
    });
    const ctl = this.#s.control;
    this.#telemetry = new Telemetry(
      telemetryView(local.buffer, local.byteOffset + ctl.offset + CONTROL.telemetry),
    );
    this.#telemetry.reset();
    this.#telemetry.set(TELEMETRY.RING_CAPACITY, this.#s.config.slots);
    this.#telemetry.set(TELEMETRY.OBJPOOL_CAPACITY, this.#s.config.objectSlabs);
    this.#telemetry.set(TELEMETRY.FABRIC_UP, 1);
    this.#telemetry.set(TELEMETRY.TCP_UP, 1);
    if (init.pressure) {
      this.#telemetry.set(
        TELEMETRY.PRESSURE_FLAGS,
        init.pressure === "ring" ? PRESSURE_RING : PRESSURE_OBJPOOL,
      );
    }
  }

  /** Aborted when the session ends. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** Null while open; the reason once closed. */
  get closedReason(): string | null {
    return this.#closed;
  }

  /** The fabric endpoint (for the engine's idle wait). */
  get endpoint(): FabricEndpoint {
    return this.#ep;
  }

  /** The doorbell value the last poll() acted on (idle waits sleep until it moves). */
  get seenDoorbell(): number {
    return this.#seenDoorbell;
  }

  /** Object pool counters (tests, stats). */
  get pool(): ObjectPool {
    return this.#pool;
  }

  /**
   * One round: handles up to `batchBudget` READY requests. Returns how many it took (0 when the
   * doorbell did not move and nothing is READY).
   */
  poll(): number {
    if (this.#closed !== null) return 0;
    const db = this.#ep.doorbell();
    if (db === this.#seenDoorbell) return 0;
    this.#inPoll = true;
    this.#seenDoorbell = db;
    // The client tells us how far up the ring it has used slots (its free list is a stack, so
    // that is about its peak concurrency); a lying value only bounds our scan by the ring size.
    const limit = Math.min(
      this.#s.config.slots,
      Math.max(1, this.#ctl[CONTROL.scanLimit >> 2] >>> 0),
    );
    let handled = 0;
    for (let k = 0; k < limit && handled < this.#budget && this.#closed === null; k++) {
      const i = (this.#cursor + k) % limit;
      if (Atomics.load(this.#ring, i * DESC_WORDS + REQ.state) !== READY) continue;
      handled++;
      this.#take(i);
    }
    this.#cursor = (this.#cursor + handled) % limit;
    if (handled === this.#budget) this.#seenDoorbell = -1; // more may be READY: look again next round
    this.#inPoll = false;
    this.flushKick(); // one kick for every answer written during this round
    return handled;
  }

  /** Rings the client's doorbell once for all responses written since the last call. */
  flushKick(): void {
    if (this.#kickPending && this.#closed === null) {
      this.#kickPending = false;
      this.#ep.flush();
      this.#ep.kick();
    }
  }

  #take(i: number): void {
    const r = this.#ring, b = i * DESC_WORDS;
    Atomics.store(r, b + REQ.state, TAKEN);
    this.#taken++;
    this.#telemetry.set(TELEMETRY.RING_USED, this.#taken);
    const seq = r[b + REQ.seq] >>> 0,
      method = r[b + REQ.method] >>> 0,
      flags = r[b + REQ.flags] >>> 0;
    const off = r[b + REQ.offset] >>> 0,
      len = r[b + REQ.length] >>> 0,
      att = r[b + REQ.attach] >>> 0;
    const cfg = this.#s.config;
    // Every number below came from the peer: check before use.
    if ((flags & FLAG_BULK) !== 0) {
      const bulk = this.#s.bulk;
      if (off < bulk.offset || off + len + att > bulk.offset + bulk.size) {
        return this.fail(`slot ${i}: BULK payload [${off}, +${len + att}) outside the BULK area`);
      }
      this.#telemetry.inc(TELEMETRY.BULK_SG_REQUESTS);
      this.#telemetry.inc(TELEMETRY.BULK_SG_BYTES, len + att);
      this.#telemetry.inc(TELEMETRY.BULK_SG_ENTRIES, r[b + REQ.sg] >>> 0);
    } else {
      const expect = this.#s.slotLocal.offset + i * cfg.slotSize;
      if (off !== expect || len + att > cfg.slotSize) {
        return this.fail(
          `slot ${i}: inline payload [${off}, +${len + att}) is not inside its slot`,
        );
      }
    }
    const local = this.#ep.local;
    const payload = local.slice(off, off + len);
    const attachment = att ? local.slice(off + len, off + len + att) : EMPTY;
    if (method === METHOD_RECLAIM) return this.#reclaim(i, seq, payload);
    if (method >= this.#methods.length) {
      return this.fail(`slot ${i}: method index ${method} ≥ ${this.#methods.length} methods`);
    }
    const [service, name] = this.#methods[method];
    const timeout = r[b + REQ.timeout] >>> 0;
    const logLo = r[b + REQ.logLo] >>> 0, logHi = r[b + REQ.logHi] >>> 0;
    // The request meta is read-only for the dispatcher: without a log id, reuse one per
    // (method, timeout) — a client sends the same timeout call after call.
    let request = logLo | logHi ? undefined : this.#requestMeta[method];
    if (request === undefined || request.timeoutMs !== (timeout || undefined)) {
      request = Object.freeze({
        serviceName: service,
        methodName: name,
        timeoutMs: timeout || undefined,
        logId: logLo | logHi ? logHi * 0x1_0000_0000 + logLo : undefined,
      });
      if (!(logLo | logHi)) this.#requestMeta[method] = request;
    }
    const meta: RpcMeta = {
      request,
      // slot, seq, PREFER_LAZY and BULK ride in the correlation id (i + 2^16·flags + 2^18·seq)
      correlationId: i + ((flags & FLAG_PREFER_LAZY) ? 0x10000 : 0) +
        ((flags & FLAG_BULK) ? 0x20000 : 0) + seq * 0x40000,
    };
    this.#dispatcher.dispatch(meta, payload, attachment, this, Date.now());
  }

  #reclaim(i: number, seq: number, payload: Uint8Array): void {
    if (payload.length % 8 !== 0) {
      return this.fail(
        `slot ${i}: RECLAIM payload of ${payload.length} bytes is not a list of 8-byte references`,
      );
    }
    const dv = new DataView(payload.buffer, payload.byteOffset, payload.length);
    for (let o = 0; o < payload.length; o += 8) {
      const res = this.#pool.reclaim(dv.getUint32(o, true), dv.getUint32(o + 4, true));
      if (res === "ok") this.#telemetry.inc(TELEMETRY.OBJ_RECLAIMS);
      else if (res === "bad-id") this.#telemetry.inc(TELEMETRY.OBJ_BAD_REFS);
      else this.#telemetry.inc(TELEMETRY.OBJ_STALE_REFS); // stale or repeated: harmless, counted
    }
    this.#telemetry.set(TELEMETRY.OBJPOOL_USED, this.#pool.usedSlabs);
    this.#answer(i, seq, 0, KIND_INLINE, EMPTY, undefined, 0);
  }

  /** ResponseSink: the dispatcher's answer to a call of this session. */
  send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
    if (this.#closed !== null) return;
    const cid = Number(call.meta.correlationId);
    const i = cid % 0x10000, bits = Math.floor(cid / 0x10000) % 4, seq = Math.floor(cid / 0x40000);
    const preferLazy = (bits & 1) !== 0, bulk = (bits & 2) !== 0;
    const us = Math.round((Date.now() - call.receivedAt) * 1000);
    if (errorCode !== 0) {
      this.#telemetry.inc(TELEMETRY.FAILED);
      return this.#answer(
        i,
        seq,
        errorCode,
        KIND_INLINE,
        enc.encode(errorText).subarray(0, this.#c.config.slotSize),
        undefined,
        us,
      );
    }
    this.#telemetry.inc(TELEMETRY.COMPLETED);
    const att = call.responseAttachment;
    const total = response.length + (att?.length ?? 0);
    const lazy = total > this.#c.config.slotSize || (preferLazy && total >= this.#largeThreshold);
    this.#telemetry.ewma(
      bulk ? TELEMETRY_PATH.BULK : lazy ? TELEMETRY_PATH.LAZY : TELEMETRY_PATH.EAGER,
      us,
    );
    if (!lazy) return this.#answer(i, seq, 0, KIND_INLINE, response, att, us);
    const id = this.#pool.alloc(total);
    if (id === POOL_FULL) {
      this.#telemetry.inc(TELEMETRY.FAILED);
      return this.#answer(
        i,
        seq,
        EOVERCROWDED,
        KIND_INLINE,
        enc.encode(`object pool full (${total} bytes)`),
        undefined,
        us,
      );
    }
    this.#pool.write(id, response, 0);
    if (att) this.#pool.write(id, att, response.length);
    this.#pool.publish(id);
    this.#telemetry.inc(TELEMETRY.OBJ_ALLOCS);
    this.#telemetry.set(TELEMETRY.OBJPOOL_USED, this.#pool.usedSlabs);
    this.#writeDesc(
      i,
      seq,
      0,
      KIND_OBJECT,
      response.length,
      this.#s.objectPool.offset + this.#pool.objectOffset(id),
      id,
      this.#pool.generation(id),
      att?.length ?? 0,
      us,
    );
  }

  #answer(
    i: number,
    seq: number,
    status: number,
    kind: number,
    body: Uint8Array,
    att: Uint8Array | undefined,
    us: number,
  ): void {
    const at = this.#c.slotLocal.offset + i * this.#c.config.slotSize;
    if (body.length) this.#ep.write(0, at, body, 0);
    if (att?.length) this.#ep.write(0, at + body.length, att, 0);
    this.#writeDesc(i, seq, status, kind, body.length, at, 0, 0, att?.length ?? 0, us);
  }

  #writeDesc(
    i: number,
    seq: number,
    status: number,
    kind: number,
    length: number,
    offset: number,
    object: number,
    gen: number,
    att: number,
    us: number,
  ): void {
    const d = this.#desc;
    d[RESP.seq] = seq;
    d[RESP.status] = status;
    d[RESP.kind] = kind;
    d[RESP.length] = length;
    d[RESP.offset] = offset;
    d[RESP.object] = object;
    d[RESP.generation] = gen;
    d[RESP.attach] = att;
    d[RESP.serverUs] = Math.min(us, 0xffffffff);
    const at = this.#c.responseRing.offset + i * DESC_WORDS * 4;
    // Free our request slot BEFORE publishing: the client may reuse it the moment it sees READY.
    Atomics.store(this.#ring, i * DESC_WORDS + REQ.state, 0);
    this.#ep.write(0, at + 4, this.#descBytes, 0);
    const st = this.#ep.writeU32(0, at, READY, 0); // state last, in its own write
    this.#taken--;
    this.#telemetry.set(TELEMETRY.RING_USED, this.#taken);
    this.#kickPending = true;
    if (st < 0) this.fail(`fabric write to the client failed (status ${st})`);
    // An answer of an async handler arrives between rounds, maybe while this server sleeps:
    // kick at once, or a sleeping client would not hear of it until its wait times out.
    else if (!this.#inPoll) this.flushKick();
  }

  /** Frees objects older than the TTL; returns how many. */
  sweep(): number {
    if (this.#closed !== null) return 0;
    const n = this.#pool.sweep();
    if (n) {
      this.#telemetry.inc(TELEMETRY.OBJ_TTL_RECLAIMS, n);
      this.#telemetry.set(TELEMETRY.OBJPOOL_USED, this.#pool.usedSlabs);
    }
    return n;
  }

  /** Fails the session (a peer violation or a fabric error): logged once, then closed. */
  fail(reason: string): void {
    if (this.#closed !== null) return;
    this.#logger.warn(
      `fabric session ${this.id} (${this.peer.host}:${this.peer.port}) failed: ${reason}`,
    );
    this.close(reason);
  }

  /** Ends the session: aborts handlers' signals, releases the region. Safe twice. */
  close(reason = "closed"): void {
    if (this.#closed !== null) return;
    // Tell the client (state word of its control page) before the memory goes away.
    if (!this.#ep.failed) {
      this.#ep.writeU32(0, this.#c.control.offset + CONTROL.state, SESSION_CLOSED, 0);
      this.#ep.kick();
    }
    this.#closed = reason;
    this.#abort.abort();
    this.#ep.close();
  }
}

/** Header bytes before an object's data (the client reads header + data + trailer). */
export const OBJECT_DATA_SKIP = OBJECT_HEADER_BYTES;
