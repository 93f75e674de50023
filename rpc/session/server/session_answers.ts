/**
 * The answer side of one server session: what becomes of a dispatched call's answer. An error
 * answer, and an answer that fits the client's slot (EAGER), is written inline; a larger one
 * (or one the client prefers LAZY) is put into the session's object pool and answered by
 * reference (LAZY). Every answer's metadata block (headers, trailers, error details) is encoded
 * here; past its bound the answer becomes ERESPONSE saying so.
 *
 * At most once. An answer whose handler ran is never refused for a redo: when the object pool
 * has no room for it, it is HELD ({@link HeldAnswers}), in order, and written as soon as
 * RECLAIMs or the TTL sweep free room ({@link SessionAnswers.roomFreed}); while answers are
 * held, later LAZY answers queue behind them. A held answer gives up — and its call fails with
 * ERESPONSE saying the server ran it and had no room for its answer — shortly before the call's
 * deadline, or after `heldAnswerMs` ({@link HeldAnswers.giveUpTime}). An answer fails at once, with
 * the same kind of error, when it is larger than the whole pool, or when the session already
 * holds `heldAnswers` answers or `heldAnswerBytes` bytes and the pool has no room for it now.
 * When the session ends, the answers it holds are dropped (their calls fail with the session's
 * reason, which says so; the pool goes with the region).
 *
 * Doorbells: answers written during a poll round (between {@link SessionAnswers.beginRound} and
 * {@link SessionAnswers.endRound}) share one kick at its end; a late answer (an async handler,
 * a held answer written from a timer) rings at once.
 *
 * Ownership and threading: one per server session, on the server's JS thread. The data path
 * (inline and LAZY answers, holding, writing held answers) allocates nothing but the error texts
 * of failed calls and the give-up timer of a hold (one armed at a time).
 * @module
 */
import type { FabricEndpoint } from "../../../transport/fabric.ts";
import { EREQUEST, ERESPONSE } from "../../errors.ts";
import type { Logger, ServerCall } from "../../protocol/dispatch.ts";
import type { RegionLayout } from "../../region/layout.ts";
import { type ObjectPool, POOL_EXHAUSTED } from "../../region/object_pool.ts";
import {
  LATENCY_SAMPLE_EVERY,
  TELEMETRY,
  type Telemetry,
  TELEMETRY_PATH,
} from "../../region/telemetry.ts";
import { dateNowThisTurn } from "../engine/turn_clock.ts";
import { HeldAnswers, type HoldLimits } from "./held_answers.ts";
import type { RequestLender } from "./request_lender.ts";
import type { ResponseToken, ResponseTokens } from "./response_tokens.ts";
import { ServerResponseWriter } from "./server_response_writer.ts";

const enc = new TextEncoder();

/** What a session's answer side works with (all owned by the session). */
export interface SessionAnswersInit {
  id: number;
  endpoint: FabricEndpoint;
  server: RegionLayout;
  client: RegionLayout;
  /** The server's request ring, as u32 words (an answer frees its request slot). */
  requestRing: Int32Array;
  tokens: ResponseTokens;
  pool: ObjectPool;
  telemetry: Telemetry;
  lender: RequestLender;
  /** The largest metadata block an answer may carry. */
  metaBound: number;
  largeThreshold: number;
  limits: HoldLimits;
  logger: Logger;
  /** Fails the whole session (a write to the client failed). */
  fail(reason: string): void;
}

/** See the module documentation. */
export class SessionAnswers {
  readonly #id: number;
  readonly #endpoint: FabricEndpoint;
  readonly #slotSize: number;
  readonly #tokens: ResponseTokens;
  readonly #pool: ObjectPool;
  readonly #telemetry: Telemetry;
  readonly #lender: RequestLender;
  readonly #writer: ServerResponseWriter;
  readonly #metaBound: number;
  readonly #largeThreshold: number;
  readonly #logger: Logger;
  readonly #fail: (reason: string) => void;
  readonly #held: HeldAnswers;
  /**
   * Per request slot: `performance.now()` when its request was taken, for the 1 call in
   * LATENCY_SAMPLE_EVERY whose server time the EWMA gets; 0 for the others. (The turn clock
   * cannot time a call: a synchronous answer comes in the same turn and would count 0 µs.)
   */
  readonly #sampledAt: Float64Array;
  #sampleCount = 0;
  /** True during a poll round: answers written then share one kick at its end. */
  #inRound = false;
  /** `Date.now()` scale time of the current round (the turn's clock), or -1. */
  #roundNow = -1;
  #kickPending = false;
  #closed = false;
  readonly #expired = (token: ResponseToken, call: ServerCall, size: number, why: string) =>
    this.#noRoom(token, call, size, why);
  /** Requests refused for a bad metadata block (each failed its call only). */
  refused = 0;
  /** Answers whose body the fabric refused (each failed its call only). */
  bodyWriteFailures = 0;
  /** Doorbells rung for answers (one per poll round that answered, plus one per late answer). */
  doorbells = 0;
  /** Answers that waited for object-pool room (held), so far. */
  heldTotal = 0;
  /** Calls that failed because the pool had no room for their answer (their handlers ran). */
  noRoomFailures = 0;

  constructor(init: SessionAnswersInit) {
    this.#id = init.id;
    this.#endpoint = init.endpoint;
    this.#slotSize = init.client.config.slotSize;
    this.#tokens = init.tokens;
    this.#pool = init.pool;
    this.#telemetry = init.telemetry;
    this.#lender = init.lender;
    this.#metaBound = init.metaBound;
    this.#largeThreshold = init.largeThreshold;
    this.#logger = init.logger;
    this.#fail = init.fail;
    const slots = init.server.config.slots;
    this.#held = new HeldAnswers(slots, init.limits, () => this.#due());
    this.#sampledAt = new Float64Array(slots);
    this.#writer = new ServerResponseWriter(
      init.endpoint,
      { server: init.server, client: init.client },
      init.requestRing,
      init.tokens,
      init.pool,
      (token, st) => {
        this.#telemetry.inc(TELEMETRY.FAILED);
        if (++this.bodyWriteFailures === 1) {
          this.#logger.warn(
            `fabric session ${this.#id}: the answer of slot ${token} could not be written (status ${st}); that call failed (logged once per session)`,
          );
        }
      },
    );
  }

  /** Answers held for object-pool room now. */
  get held(): number {
    return this.#held.length;
  }

  /** Bytes of the answers held now. */
  get heldBytes(): number {
    return this.#held.bytes;
  }

  /** A poll round begins: answers written until {@link endRound} share one kick. */
  beginRound(): void {
    this.#inRound = true;
  }

  /** The round ends: one kick for every answer written during it. */
  endRound(): void {
    this.#inRound = false;
    this.#roundNow = -1;
    this.#ringClientDoorbell();
  }

  /** `Date.now()` scale time: the round's one clock reading, or now outside a round. */
  now(): number {
    if (!this.#inRound) return Date.now();
    if (this.#roundNow < 0) this.#roundNow = dateNowThisTurn();
    return this.#roundNow;
  }

  /** The request of `token` was just dispatched: 1 in LATENCY_SAMPLE_EVERY is timed. */
  sample(token: ResponseToken): void {
    this.#sampledAt[token] = (this.#sampleCount++ % LATENCY_SAMPLE_EVERY) === 0
      ? performance.now()
      : 0;
  }

  /** Answers `token` inline with `status` (0 = OK) and `body`, no metadata (a RECLAIM's answer). */
  inline(token: ResponseToken, status: number, body: Uint8Array): void {
    this.#answered(token, this.#writer.inline(token, status, body, undefined, 0));
  }

  /**
   * Answers the request behind `token` with EREQUEST `slot N: why` without running it (its
   * metadata block is bad); the session goes on. Logged once per session.
   */
  refuse(token: ResponseToken, why: string): void {
    const text = `slot ${token}: ${why}`;
    if (this.refused++ === 0) {
      this.#logger.warn(`fabric session ${this.#id}: a request refused (logged once): ${text}`);
    }
    this.#telemetry.inc(TELEMETRY.FAILED);
    this.inline(token, EREQUEST, enc.encode(text).subarray(0, this.#slotSize));
  }

  /** The dispatcher's answer to `call`, whose request is behind the open `token`. */
  send(
    token: ResponseToken,
    call: ServerCall,
    response: Uint8Array,
    errorCode: number,
    errorText: string,
  ): void {
    // Headers, trailers, error details: a block at the end of the client's slot (bounded).
    const bound = this.#metaBound, details = errorCode ? call.errorDetails : undefined;
    let meta = this.#encodeMeta(call, details);
    if (meta < 0) {
      errorText =
        `the answer's metadata block of ${-meta} bytes exceeds the fabric bound of ${bound} bytes`;
      (errorCode = ERESPONSE, meta = 0);
    }
    const slotSize = this.#slotSize;
    if (errorCode !== 0) {
      this.#telemetry.inc(TELEMETRY.FAILED);
      const text = enc.encode(errorText).subarray(0, slotSize - meta);
      return this.#answered(
        token,
        this.#writer.inline(token, errorCode, text, undefined, this.#serverUs(call), meta),
      );
    }
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
      this.#telemetry.inc(TELEMETRY.COMPLETED);
      const us = this.#serverUs(call);
      return this.#answered(token, this.#writer.inline(token, 0, response, att, us, meta));
    }
    if (total > this.#pool.maxObjectBytes) {
      return this.#noRoom(
        token,
        call,
        total,
        `: it is larger than the whole pool (${this.#pool.maxObjectBytes} bytes for one ` +
          `answer; raise the region's objectSlabs / objectSlabSize, or pass ` +
          `expectedResponseBytes so the client sends such a call over TCP)`,
      );
    }
    // In order: while answers are held, a new one waits behind them (unless the bound is reached
    // and the pool has room for it now).
    if (this.#held.length === 0 && this.#writeObject(token, call, response, total, meta)) return;
    this.#hold(token, call, response, total, meta);
  }

  /** Encodes `call`'s answer metadata block; its size, or minus its size past the bound. */
  #encodeMeta(call: ServerCall, details: ServerCall["errorDetails"]): number {
    return this.#writer.metaBlock.answer(
      call.responseUserFields,
      call.responseTrailers,
      details,
      this.#metaBound,
    );
  }

  /** The server time of `call` so far, in µs (a synchronous answer's is 0: the round's clock). */
  #serverUs(call: ServerCall): number {
    return Math.round((this.now() - call.receivedAt) * 1000);
  }

  /**
   * Puts `call`'s answer (`total` bytes, metadata block of `meta` bytes already encoded) into
   * the pool and answers `token` with its reference. False (nothing written) when the pool has
   * no room for it now.
   */
  #writeObject(
    token: ResponseToken,
    call: ServerCall,
    response: Uint8Array,
    total: number,
    meta: number,
  ): boolean {
    const id = this.#pool.alloc(total);
    if (id === POOL_EXHAUSTED) return false;
    const att = call.responseAttachment;
    this.#pool.write(id, response, 0);
    if (att) this.#pool.write(id, att, response.length);
    this.#pool.publish(id);
    this.#telemetry.inc(TELEMETRY.COMPLETED);
    this.#telemetry.inc(TELEMETRY.OBJ_ALLOCS);
    this.#telemetry.set(TELEMETRY.OBJPOOL_USED, this.#pool.usedSlabs);
    const us = this.#serverUs(call), attBytes = att?.length ?? 0;
    this.#answered(token, this.#writer.object(token, id, response.length, attBytes, us, meta));
    return true;
  }

  /** No room for `call`'s answer now: holds it, or fails the call when past the bounds. */
  #hold(
    token: ResponseToken,
    call: ServerCall,
    response: Uint8Array,
    total: number,
    meta: number,
  ): void {
    const h = this.#held, lim = h.limits;
    if (!h.admits(total)) {
      if (this.#writeObject(token, call, response, total, meta)) return; // room after all
      return this.#noRoom(
        token,
        call,
        total,
        ` and this session already holds ${h.length} answers (${h.bytes} bytes) waiting for ` +
          `room, its bound (heldAnswers ${lim.heldAnswers}, heldAnswerBytes ${lim.heldAnswerBytes})`,
      );
    }
    const now = Date.now(), giveUpAt = h.giveUpTime(call, now);
    if (giveUpAt <= now) {
      return this.#noRoom(token, call, total, ` and its deadline leaves no time to wait for room`);
    }
    h.hold(token, call, response, total, now, giveUpAt);
    if (this.heldTotal++ === 0) {
      this.#logger.info?.(
        `fabric session ${this.#id}: an answer of ${total} bytes waits for object-pool room ` +
          `(its call ran; it is written when the client reclaims objects or their TTL passes; ` +
          `logged once per session)`,
      );
    }
  }

  /**
   * Objects were freed (RECLAIMs, the TTL sweep): writes the held answers that fit now, oldest
   * first, stopping at the first that does not.
   */
  roomFreed(): void {
    const h = this.#held;
    while (h.length > 0 && !this.#closed) {
      const token = h.peek(), call = h.call(token), response = h.response(token);
      const meta = this.#encodeMeta(call, undefined); // (it fit the bound when it was held)
      if (!this.#writeObject(token, call, response, h.size(token), meta < 0 ? 0 : meta)) break;
      h.shift();
    }
    h.rearm();
  }

  /** A held answer's give-up time came: fails those whose time came; re-arms for the next. */
  #due(): void {
    if (this.#closed) return;
    this.beginRound(); // (a timer runs between poll rounds) the failures below share one kick
    this.#held.expire(Date.now(), this.#expired);
    this.endRound();
    this.#held.rearm();
  }

  /**
   * Fails `call` (behind `token`) with ERESPONSE: the server ran it, its pool had no room for the
   * `total`-byte answer (`why`); the call is not redone. Logged once per session.
   */
  #noRoom(token: ResponseToken, call: ServerCall, total: number, why: string): void {
    this.#telemetry.inc(TELEMETRY.FAILED);
    const text = `the server ran ${call.service}.${call.method} but its object pool had no ` +
      `room for the ${total}-byte answer${why}; the call is not redone`;
    if (this.noRoomFailures++ === 0) {
      this.#logger.warn(`fabric session ${this.#id}: a call failed (logged once): ${text}`);
    }
    const body = enc.encode(text).subarray(0, this.#slotSize);
    this.#answered(
      token,
      this.#writer.inline(token, ERESPONSE, body, undefined, this.#serverUs(call)),
    );
  }

  /** Bookkeeping after the answer of `token` was published with fabric status `status`. */
  #answered(token: ResponseToken, status: number): void {
    this.#lender.giveBack(token); // the answer is written: the handler is done with its request
    this.#telemetry.set(TELEMETRY.RING_USED, this.#tokens.openCount);
    this.#kickPending = true;
    if (status < 0) this.#fail(`fabric write to the client failed (status ${status})`);
    // An answer of an async handler arrives between rounds, maybe while this server sleeps:
    // ring at once, or a sleeping client would not hear of it until its wait times out.
    else if (!this.#inRound) this.#ringClientDoorbell();
  }

  /** Rings the client's doorbell once for all responses written since the last ring. */
  #ringClientDoorbell(): void {
    if (this.#kickPending && !this.#closed) {
      this.#kickPending = false;
      this.doorbells++;
      this.#endpoint.flush();
      this.#endpoint.kick();
    }
  }

  /**
   * The session ends: drops the answers held (their calls fail with the session's reason) and
   * the give-up timer. Returns how many answers it dropped. Safe twice.
   */
  close(): number {
    if (this.#closed) return 0;
    this.#closed = true;
    return this.#held.dropAll();
  }
}
