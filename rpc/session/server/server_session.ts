/**
 * The server side of one fabric session: takes READY requests out of its request ring (at most
 * `batchBudget` per round), validates every field the client wrote (offsets, lengths, slot and
 * method indices — a bad one fails this session only, with a logged reason), copies the payload
 * out of shared memory, dispatches it through the same {@link Dispatcher} as TCP, and writes each
 * answer into the client's response ring: inline when it fits the slot (EAGER), as an object
 * reference into the object pool otherwise or when the client prefers LAZY (LAZY). RECLAIMs free
 * objects; a TTL sweep frees what nobody reclaimed. The dispatcher's answer finds its request
 * again through a {@link ResponseTokens} token (the ring slot index, sent as `correlationId`);
 * the {@link ServerResponseWriter} writes it. Headers travel in metadata blocks at the end of
 * the call's slot (`meta_block.ts`): a request's is read by {@link RequestMetas} — a bad one
 * fails that call only, with EREQUEST saying why —, an answer's carries the call's response
 * headers, trailers and error details (past the bound, the answer becomes ERESPONSE saying so).
 *
 * Threading: one JS thread (the server's). Nothing touches region memory after close().
 * @module
 */
import type { FabricEndpoint } from "../../../transport/fabric.ts";
import type { NetAddress } from "../../../transport/tcp/tcp.ts";
import { EOVERCROWDED, EREQUEST, ERESPONSE } from "../../errors.ts";
import type { Dispatcher, Logger, ResponseSink, ServerCall } from "../../protocol/dispatch.ts";
import {
  DESC_WORDS,
  FLAG_BULK,
  FLAG_PREFER_LAZY,
  METHOD_RECLAIM,
  READY,
  readyRequests,
  REQ,
  TAKEN,
} from "../../region/descriptors.ts";
import { CONTROL, type RegionLayout, SESSION_CLOSED } from "../../region/layout.ts";
import { ObjectPool, POOL_EXHAUSTED } from "../../region/object_pool.ts";
import {
  LATENCY_SAMPLE_EVERY,
  TELEMETRY,
  type Telemetry,
  TELEMETRY_PATH,
} from "../../region/telemetry.ts";
import { applyReclaims, sessionTelemetry } from "./server_telemetry.ts";
import { type ResponseToken, ResponseTokens } from "./response_tokens.ts";
import { ServerResponseWriter } from "./server_response_writer.ts";
import { copyOut } from "../copy_out.ts";
import { turnDateNow } from "../engine/turn_clock.ts";
import { RequestLender } from "./request_lender.ts";
import { RequestMetas } from "./request_metas.ts";
import { EndNotice } from "../../../util/end_notice.ts";
import { FabricStreams } from "../../stream/stream_ring.ts";
import { sessionStreams } from "../../stream/session_streams.ts";

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
  /** Lends large requests of borrowing handlers reused buffers (default: a private lender). */
  lender?: RequestLender;
}

/** One fabric session, server side. */
export class ServerSession implements ResponseSink {
  readonly id: number;
  readonly peer: NetAddress;
  /** The session's end: listeners run at close (`lifetime.onEnd`), a signal for handlers. */
  readonly lifetime: EndNotice = new EndNotice();
  readonly #endpoint: FabricEndpoint;
  readonly #server: RegionLayout;
  readonly #client: RegionLayout;
  /** The server's request ring, as u32 words (Int32 for Atomics). */
  readonly #requestRing: Int32Array;
  /** The server's control page, as u32 words (the client writes the scan limit there). */
  readonly #control: Int32Array;
  readonly #dispatcher: Dispatcher;
  readonly #methods: ServerSessionInit["methods"];
  readonly #pool: ObjectPool;
  readonly #telemetry: Telemetry;
  readonly #budget: number;
  readonly #largeThreshold: number;
  readonly #logger: Logger;
  readonly #tokens: ResponseTokens;
  readonly #answers: ServerResponseWriter;
  readonly #lender: RequestLender;
  /** The request metas handed to the dispatcher (see request_metas.ts). */
  readonly #metas: RequestMetas;
  /** `Date.now()` scale time of the current poll round (the turn's clock), or -1. */
  #roundNow = -1;
  /**
   * Per request slot: `performance.now()` when its request was taken, for the 1 call in
   * LATENCY_SAMPLE_EVERY whose server time the EWMA gets; 0 for the others. (The turn clock
   * cannot time a call: a synchronous answer comes in the same turn and would count 0 µs.)
   */
  readonly #sampledAt: Float64Array;
  #sampleCount = 0;
  /** Requests refused for a bad metadata block (each failed its call only). */
  refused = 0;
  /** Answers whose body the fabric refused (each failed its call only). */
  bodyWriteFailures = 0;
  /** Doorbells rung for answers (one per poll round that answered, plus one per late answer). */
  doorbells = 0;
  /** Where the next round's scan of the request ring starts. */
  #cursor = 0;
  #kickPending = false;
  /** True while poll() runs: answers written then share one kick at its end. */
  #inPoll = false;
  #closed: string | null = null;
  #seenDoorbell = 0;
  /** Set at close: the requests still READY (never taken, never to be), as [slot, seq]. */
  untaken: readonly [number, number][] = [];
  /** The session's brpc streams (`rpc/stream/stream_ring.ts`), found by `acceptStream`. */
  readonly streams: FabricStreams;

  constructor(init: ServerSessionInit) {
    this.id = init.id;
    this.peer = init.peer;
    this.#endpoint = init.endpoint;
    this.#server = init.server;
    this.#client = init.client;
    this.#dispatcher = init.dispatcher;
    this.#methods = init.methods;
    this.#budget = init.batchBudget;
    this.#largeThreshold = init.largeThreshold;
    this.#logger = init.logger;
    const local = this.#endpoint.local;
    const rr = this.#server.requestRing;
    this.#requestRing = new Int32Array(local.buffer, local.byteOffset + rr.offset, rr.size >> 2);
    this.#control = new Int32Array(
      local.buffer,
      local.byteOffset + this.#server.control.offset,
      (CONTROL.scanLimit >> 2) + 1,
    );
    const op = this.#server.objectPool;
    this.#pool = new ObjectPool(local.subarray(op.offset, op.offset + op.size), {
      slabSize: this.#server.config.objectSlabSize,
      slabs: Math.max(1, this.#server.config.objectSlabs),
      ttlMs: init.ttlMs,
    });
    this.#tokens = new ResponseTokens(this.#server.config.slots);
    this.#sampledAt = new Float64Array(this.#server.config.slots);
    this.#lender = init.lender ?? new RequestLender(init.dispatcher);
    const where = `${init.peer.host}:${init.peer.port}`;
    this.streams = FabricStreams.between(
      this.#endpoint,
      this.#server,
      this.#client,
      where,
      (r) => this.fail(`stream pipe: ${r}`),
    );
    sessionStreams.add(where, this.streams);
    const cfg = this.#server.config;
    this.#metas = new RequestMetas(cfg.slots, cfg.slotSize, this.#server.slotLocal.offset);
    this.#answers = new ServerResponseWriter(
      this.#endpoint,
      { server: this.#server, client: this.#client },
      this.#requestRing,
      this.#tokens,
      this.#pool,
      (token, st) => {
        this.#telemetry.inc(TELEMETRY.FAILED);
        this.bodyWriteFailures++;
        if (this.bodyWriteFailures === 1) {
          this.#logger.warn(
            `fabric session ${this.id}: the answer of slot ${token} could not be written (status ${st}); that call failed (logged once per session)`,
          );
        }
      },
    );
    this.#telemetry = sessionTelemetry(local, this.#server, init.pressure);
  }

  /** Aborted when the session ends. */
  get signal(): AbortSignal {
    return this.lifetime.signal;
  }

  /** Null while open; the reason once closed. */
  get closedReason(): string | null {
    return this.#closed;
  }

  /** The fabric endpoint (for the engine's idle wait). */
  get endpoint(): FabricEndpoint {
    return this.#endpoint;
  }

  /** The doorbell value the last poll() acted on (idle waits sleep until it moves). */
  get seenDoorbell(): number {
    return this.#seenDoorbell;
  }

  /** poll() calls so far (tests and stats: an idle session is never polled). */
  rounds = 0;

  /** Object pool counters (tests, stats). */
  get pool(): ObjectPool {
    return this.#pool;
  }

  /**
   * One round: handles up to `batchBudget` READY requests. Returns how many it took (0 when the
   * doorbell did not move and nothing is READY).
   */
  poll(): number {
    this.rounds++;
    if (this.#closed !== null || this.#endpointFailed()) return 0;
    const streamed = this.streams.pump(); // the client's stream frames, credit for ours
    if (this.#closed !== null) return streamed; // the client broke the stream pipe
    const db = this.#endpoint.doorbell();
    if (db === this.#seenDoorbell) {
      if (this.streams.wantsTurn) this.#seenDoorbell = -1; // a stream post waits for room
      return streamed;
    }
    this.#inPoll = true;
    this.#seenDoorbell = db;
    // The client tells us how far up the ring it has used slots (its free list is a stack, so
    // that is about its peak concurrency); a lying value only bounds our scan by the ring size.
    const limit = Math.min(
      this.#server.config.slots,
      Math.max(1, this.#control[CONTROL.scanLimit >> 2] >>> 0),
    );
    let handled = 0;
    for (let k = 0; k < limit && handled < this.#budget && this.#closed === null; k++) {
      const i = (this.#cursor + k) % limit;
      if (Atomics.load(this.#requestRing, i * DESC_WORDS + REQ.state) !== READY) continue;
      handled++;
      this.#take(i);
    }
    this.#cursor = (this.#cursor + handled) % limit;
    if (handled === this.#budget) this.#seenDoorbell = -1; // more may be READY: look again next round
    this.#inPoll = false;
    this.#roundNow = -1;
    this.#ringClientDoorbell(); // one kick for every answer written during this round
    return handled + streamed;
  }

  /** Rings the client's doorbell once for all responses written since the last ring. */
  #ringClientDoorbell(): void {
    if (this.#kickPending && this.#closed === null) {
      this.#kickPending = false;
      this.doorbells++;
      this.#endpoint.flush();
      this.#endpoint.kick();
    }
  }

  /** Takes the READY request in slot `i`: checks it, copies it out, dispatches it. */
  #take(i: number): void {
    const r = this.#requestRing, b = i * DESC_WORDS;
    r[b + REQ.state] = TAKEN; // plain: the client rewrites it only after our answer's publication
    const seq = r[b + REQ.seq] >>> 0,
      method = r[b + REQ.method] >>> 0,
      flags = r[b + REQ.flags] >>> 0;
    const off = r[b + REQ.offset] >>> 0,
      len = r[b + REQ.length] >>> 0,
      att = r[b + REQ.attach] >>> 0;
    const cfg = this.#server.config;
    // Every number below came from the peer: check before use.
    if ((flags & FLAG_BULK) !== 0) {
      const bulk = this.#server.bulk;
      if (off < bulk.offset || off + len + att > bulk.offset + bulk.size) {
        return this.fail(`slot ${i}: BULK payload [${off}, +${len + att}) outside the BULK area`);
      }
      this.#telemetry.inc(TELEMETRY.BULK_SG_REQUESTS);
      this.#telemetry.inc(TELEMETRY.BULK_SG_BYTES, len + att);
      this.#telemetry.inc(TELEMETRY.BULK_SG_ENTRIES, r[b + REQ.sg] >>> 0);
    } else {
      const expect = this.#server.slotLocal.offset + i * cfg.slotSize;
      if (off !== expect || len + att > cfg.slotSize) {
        return this.fail(
          `slot ${i}: inline payload [${off}, +${len + att}) is not inside its slot`,
        );
      }
    }
    if (
      !this.#tokens.open(i, seq, (flags & FLAG_PREFER_LAZY) !== 0, (flags & FLAG_BULK) !== 0)
    ) {
      return this.fail(`slot ${i}: READY again while its last request is still being served`);
    }
    this.#telemetry.set(TELEMETRY.RING_USED, this.#tokens.openCount);
    const local = this.#endpoint.local;
    if (method === METHOD_RECLAIM) return this.#reclaim(i, copyOut(local, off, len));
    if (method >= this.#methods.length) {
      return this.fail(`slot ${i}: method index ${method} ≥ ${this.#methods.length} methods`);
    }
    const block = this.#metas.block(
      local,
      i,
      r[b + REQ.meta] >>> 0,
      (flags & FLAG_BULK) === 0 ? len + att : -1,
    );
    if (typeof block === "string") return this.#refuse(i, block);
    const [service, name] = this.#methods[method];
    // A large request of a handler that borrows it comes in a lent, reused buffer (given back
    // when the call is answered); any other is the handler's own copy.
    let payload: Uint8Array, attachment: Uint8Array;
    const lent = this.#lender.lend(i, method, service, name, local, off, len + att);
    if (lent !== undefined) {
      payload = lent.subarray(0, len);
      attachment = att ? lent.subarray(len, len + att) : EMPTY;
    } else {
      payload = copyOut(local, off, len);
      attachment = att ? copyOut(local, off + len, att) : EMPTY;
    }
    const timeout = r[b + REQ.timeout] >>> 0;
    const logLo = r[b + REQ.logLo] >>> 0, logHi = r[b + REQ.logHi] >>> 0;
    // The answer comes back through send() with the slot as its token (its correlationId).
    const meta = this.#metas.meta(i, method, service, name, timeout, logLo, logHi, block);
    if (this.#roundNow < 0) this.#roundNow = turnDateNow(); // the turn's clock reading
    this.#sampledAt[i] = (this.#sampleCount++ % LATENCY_SAMPLE_EVERY) === 0 ? performance.now() : 0;
    this.#dispatcher.dispatch(meta, payload, attachment, this, this.#roundNow);
  }

  /**
   * Answers the request behind `token` with EREQUEST `slot N: why` without running it (its
   * metadata block is bad); the session goes on. Logged once per session.
   */
  #refuse(token: ResponseToken, why: string): void {
    const text = `slot ${token}: ${why}`;
    if (this.refused++ === 0) {
      this.#logger.warn(`fabric session ${this.id}: a request refused (logged once): ${text}`);
    }
    this.#telemetry.inc(TELEMETRY.FAILED);
    const body = enc.encode(text).subarray(0, this.#client.config.slotSize);
    this.#answered(token, this.#answers.inline(token, EREQUEST, body, undefined, 0));
  }

  /** A RECLAIM batch in the request behind `token`: frees the objects, answers empty. */
  #reclaim(token: ResponseToken, payload: Uint8Array): void {
    const bad = applyReclaims(this.#pool, this.#telemetry, payload);
    if (bad !== null) return this.fail(`slot ${token}: ${bad}`);
    this.#answered(token, this.#answers.inline(token, 0, EMPTY, undefined, 0));
  }

  /** ResponseSink: the dispatcher's answer to a call of this session. */
  send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
    if (this.#closed !== null) return;
    const token: ResponseToken = Number(call.meta.correlationId);
    if (!this.#tokens.isOpen(token)) return; // not a request of this session's ring
    // A synchronous answer (in this round) took no measurable time; a late one reads the clock.
    const now = this.#inPoll && this.#roundNow >= 0 ? this.#roundNow : Date.now();
    const us = Math.round((now - call.receivedAt) * 1000);
    // Headers, trailers, error details: a block at the end of the client's slot (bounded).
    const bound = this.#metas.bound, details = errorCode ? call.errorDetails : undefined;
    let meta = this.#answers.metaBlock.answer(
      call.responseUserFields,
      call.responseTrailers,
      details,
      bound,
    );
    if (meta < 0) {
      errorText =
        `the answer's metadata block of ${-meta} bytes exceeds the fabric bound of ${bound} bytes`;
      (errorCode = ERESPONSE, meta = 0);
    }
    const slotSize = this.#client.config.slotSize;
    if (errorCode !== 0) {
      this.#telemetry.inc(TELEMETRY.FAILED);
      const text = enc.encode(errorText).subarray(0, slotSize - meta);
      return this.#answered(
        token,
        this.#answers.inline(token, errorCode, text, undefined, us, meta),
      );
    }
    this.#telemetry.inc(TELEMETRY.COMPLETED);
    const att = call.responseAttachment;
    const total = response.length + (att?.length ?? 0);
    const lazy = total + meta > slotSize ||
      (this.#tokens.prefersLazy(token) && total >= this.#largeThreshold);
    const path = this.#tokens.cameBulk(token) ? "BULK" : lazy ? "LAZY" : "EAGER";
    const sampled = this.#sampledAt[token];
    if (sampled > 0) {
      this.#sampledAt[token] = 0;
      this.#telemetry.ewma(TELEMETRY_PATH[path], (performance.now() - sampled) * 1000);
    }
    if (!lazy) {
      return this.#answered(token, this.#answers.inline(token, 0, response, att, us, meta));
    }
    const id = this.#pool.alloc(total);
    if (id === POOL_EXHAUSTED) {
      this.#telemetry.inc(TELEMETRY.FAILED);
      const text = enc.encode(`object pool full (${total} bytes)`);
      return this.#answered(token, this.#answers.inline(token, EOVERCROWDED, text, undefined, us));
    }
    this.#pool.write(id, response, 0);
    if (att) this.#pool.write(id, att, response.length);
    this.#pool.publish(id);
    this.#telemetry.inc(TELEMETRY.OBJ_ALLOCS);
    this.#telemetry.set(TELEMETRY.OBJPOOL_USED, this.#pool.usedSlabs);
    const attBytes = att?.length ?? 0;
    this.#answered(token, this.#answers.object(token, id, response.length, attBytes, us, meta));
  }

  /** Bookkeeping after the answer of `token` was published with fabric status `status`. */
  #answered(token: ResponseToken, status: number): void {
    this.#lender.giveBack(token); // the answer is written: the handler is done with its request
    this.#telemetry.set(TELEMETRY.RING_USED, this.#tokens.openCount);
    this.#kickPending = true;
    if (status < 0) this.fail(`fabric write to the client failed (status ${status})`);
    // An answer of an async handler arrives between rounds, maybe while this server sleeps:
    // ring at once, or a sleeping client would not hear of it until its wait times out.
    else if (!this.#inPoll) this.#ringClientDoorbell();
  }

  /**
   * True (after failing the session, which answers the client's Watch) when the endpoint failed on
   * its own: an overrun on its JFC, a completion error — nothing the client could see.
   */
  #endpointFailed(): boolean {
    if (!this.#endpoint.failed) return false;
    this.fail(`its fabric endpoint failed: ${this.#endpoint.failureReason ?? "unknown reason"}`);
    return true;
  }

  /** The once-a-second tick: notices a failed endpoint, frees objects older than the TTL. */
  sweep(): number {
    if (this.#closed !== null || this.#endpointFailed() || this.#pool.usedSlabs === 0) return 0;
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
    if (!this.#endpoint.failed) {
      this.#endpoint.writeU32(0, this.#client.control.offset + CONTROL.state, SESSION_CLOSED, 0);
      this.#endpoint.kick();
    }
    this.#closed = reason;
    this.streams.end(reason);
    sessionStreams.remove(`${this.peer.host}:${this.peer.port}`, this.streams);
    // Before the memory goes: the Watch answer names them (the client redoes them over TCP).
    this.untaken = readyRequests(this.#requestRing, this.#server.config.slots);
    this.lifetime.end();
    this.#lender.forgetAll(); // handlers still running keep theirs
    this.#endpoint.close();
  }
}
