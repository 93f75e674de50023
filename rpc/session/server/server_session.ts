/**
 * The server side of one fabric session: takes READY requests out of its request ring (at most
 * `batchBudget` per round), validates every field the client wrote (offsets, lengths, slot and
 * method indices — a bad one fails this session only, with a logged reason), copies the payload
 * out of shared memory, dispatches it through the same {@link Dispatcher} as TCP, and writes each
 * answer into the client's response ring: inline when it fits the slot (EAGER), as an object
 * reference into the object pool otherwise or when the client prefers LAZY (LAZY). RECLAIMs free
 * objects; a TTL sweep frees what nobody reclaimed. The dispatcher's answer finds its request
 * again through a {@link ResponseTokens} token (the ring slot index, sent as `correlationId`);
 * {@link SessionAnswers} (`session_answers.ts`) answers it — and, when the pool has no room for
 * a LAZY answer, holds it until RECLAIMs or the sweep free room: a call whose handler ran is
 * never refused for a redo (at most once). Headers travel in metadata blocks at the end of
 * the call's slot (`meta_block.ts`): a request's is read by {@link RequestMetas} — a bad one
 * fails that call only, with EREQUEST saying why —, an answer's carries the call's response
 * headers, trailers and error details (past the bound, the answer becomes ERESPONSE saying so).
 *
 * Threading: one JS thread (the server's). Nothing touches region memory after close().
 * @module
 */
import type { FabricEndpoint } from "../../../transport/fabric.ts";
import type { NetAddress } from "../../../transport/tcp/tcp.ts";
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
import { ObjectPool } from "../../region/object_pool.ts";
import { TELEMETRY, type Telemetry } from "../../region/telemetry.ts";
import { applyReclaims, sessionTelemetry } from "./server_telemetry.ts";
import { type ResponseToken, ResponseTokens } from "./response_tokens.ts";
import { SessionAnswers } from "./session_answers.ts";
import { DEFAULT_HOLD, type HoldLimits } from "./held_answers.ts";
import { copyOut } from "../copy_out.ts";
import { RequestLender } from "./request_lender.ts";
import { RequestMetas } from "./request_metas.ts";
import { EndNotice } from "../../../util/end_notice.ts";
import { FabricStreams } from "../../stream/stream_ring.ts";
import { loadAcquire } from "../../../transport/word_order.ts";

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
  /** Answers held for object-pool room at most, and for how long (default {@link DEFAULT_HOLD}). */
  hold?: HoldLimits;
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
  readonly #logger: Logger;
  readonly #tokens: ResponseTokens;
  /** What becomes of the answers (inline, LAZY, held for pool room): session_answers.ts. */
  readonly #answers: SessionAnswers;
  readonly #lender: RequestLender;
  /** The request metas handed to the dispatcher (see request_metas.ts). */
  readonly #metas: RequestMetas;
  /** Where the next round's scan of the request ring starts. */
  #cursor = 0;
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
    this.#lender = init.lender ?? new RequestLender(init.dispatcher);
    this.streams = FabricStreams.between(
      this.#endpoint,
      this.#server,
      this.#client,
      `${init.peer.host}:${init.peer.port}`,
      (r) => this.fail(`stream pipe: ${r}`),
    );
    // The calls that open streams on this session come through its pipe (`pipe_calls.ts`).
    this.streams.calls.serve({
      dispatcher: init.dispatcher,
      peer: init.peer,
      lifetime: this.lifetime,
    });
    const cfg = this.#server.config;
    this.#metas = new RequestMetas(cfg.slots, cfg.slotSize, this.#server.slotLocal.offset);
    this.#telemetry = sessionTelemetry(local, this.#server, init.pressure);
    this.#answers = new SessionAnswers({
      id: this.id,
      endpoint: this.#endpoint,
      server: this.#server,
      client: this.#client,
      requestRing: this.#requestRing,
      tokens: this.#tokens,
      pool: this.#pool,
      telemetry: this.#telemetry,
      lender: this.#lender,
      metaBound: this.#metas.bound,
      largeThreshold: init.largeThreshold,
      limits: init.hold ?? DEFAULT_HOLD,
      logger: this.#logger,
      fail: (reason) => this.fail(reason),
    });
  }

  /** Requests refused for a bad metadata block (each failed its call only). */
  get refused(): number {
    return this.#answers.refused;
  }

  /** Answers whose body the fabric refused (each failed its call only). */
  get bodyWriteFailures(): number {
    return this.#answers.bodyWriteFailures;
  }

  /** Doorbells rung for answers (one per poll round that answered, plus one per late answer). */
  get doorbells(): number {
    return this.#answers.doorbells;
  }

  /** The answer side: answers held for object-pool room and the counters (tests, stats). */
  get answers(): SessionAnswers {
    return this.#answers;
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
    this.#answers.beginRound();
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
      if (loadAcquire(this.#requestRing, i * DESC_WORDS + REQ.state) !== READY) continue;
      handled++;
      this.#take(i);
    }
    this.#cursor = (this.#cursor + handled) % limit;
    if (handled === this.#budget) this.#seenDoorbell = -1; // more may be READY: look again next round
    this.#answers.endRound(); // one kick for every answer written during this round
    return handled + streamed;
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
    if (typeof block === "string") return this.#answers.refuse(i, block);
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
    const now = this.#answers.now(); // the turn's clock reading
    this.#answers.sample(i);
    this.#dispatcher.dispatch(meta, payload, attachment, this, now);
  }

  /**
   * A RECLAIM batch in the request behind `token`: frees the objects, answers empty, then writes
   * the answers held for room that fit now.
   */
  #reclaim(token: ResponseToken, payload: Uint8Array): void {
    const bad = applyReclaims(this.#pool, this.#telemetry, payload);
    if (bad !== null) return this.fail(`slot ${token}: ${bad}`);
    this.#answers.inline(token, 0, EMPTY);
    if (this.#answers.held > 0) this.#answers.roomFreed();
  }

  /** ResponseSink: the dispatcher's answer to a call of this session. */
  send(call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
    if (this.#closed !== null) return;
    const token: ResponseToken = Number(call.meta.correlationId);
    if (!this.#tokens.isOpen(token)) return; // not a request of this session's ring
    this.#answers.send(token, call, response, errorCode, errorText);
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

  /**
   * The once-a-second tick: notices a failed endpoint, frees objects older than the TTL (and
   * writes the answers held for room that fit then).
   */
  sweep(): number {
    if (this.#closed !== null || this.#endpointFailed() || this.#pool.usedSlabs === 0) return 0;
    const n = this.#pool.sweep();
    if (n) {
      this.#telemetry.inc(TELEMETRY.OBJ_TTL_RECLAIMS, n);
      this.#telemetry.set(TELEMETRY.OBJPOOL_USED, this.#pool.usedSlabs);
      if (this.#answers.held > 0) {
        this.#answers.beginRound(); // one kick for the answers written now
        this.#answers.roomFreed();
        this.#answers.endRound();
      }
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

  /**
   * Ends the session: aborts handlers' signals, releases the region. Answers held for object-pool
   * room are dropped (their calls ran: the client fails them with this reason, which says so,
   * and never redoes them). Safe twice.
   */
  close(reason = "closed"): void {
    if (this.#closed !== null) return;
    const dropped = this.#answers.close();
    if (dropped > 0) {
      reason += `; ${dropped} answer(s) of calls the server had run were waiting for ` +
        `object-pool room and are dropped (those calls fail, they are not redone)`;
    }
    // Tell the client (state word of its control page) before the memory goes away.
    if (!this.#endpoint.failed) {
      this.#endpoint.writeU32(0, this.#client.control.offset + CONTROL.state, SESSION_CLOSED, 0);
      this.#endpoint.kick();
    }
    this.#closed = reason;
    this.streams.end(reason);
    // Before the memory goes: the Watch answer names them (the client redoes them over TCP).
    this.untaken = readyRequests(this.#requestRing, this.#server.config.slots);
    this.lifetime.end();
    this.#lender.forgetAll(); // handlers still running keep theirs
    this.#endpoint.close();
  }
}
