/**
 * The receives of one URMA side, which are the peer's notification credits: a WRITE_IMM kick
 * (or the handshake SEND) consumes one and completes on the process's JFC, which is what tells
 * the hub this session has work (and wakes the process when it sleeps). Consumed receives are reposted in batches (all share one receive buffer: only the
 * handshake SEND carries bytes), and my running total of posted receives is published into the
 * peer's fabric page, so the peer knows how many kicks may carry an immediate.
 *
 * Buffers: the receive work requests are preallocated here; the receive buffer lives in the aux
 * segment (owned by the endpoint). Allocates nothing after construction. One JS thread.
 * @module
 */
import { OK } from "../fabric.ts";
import { AUX_RECV, AUX_RECV_LEN, RECV_DEPTH } from "./endpoint_config.ts";
import { UrmaRecvBatch } from "./data_path.ts";
import { statusName } from "./errors.ts";
import type { EndpointHealth } from "./health.ts";
import type { Jetty } from "./jetty.ts";
import type { Segment } from "./segment.ts";
import type { UrmaSendSide } from "./send_side.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Consumed receives are reposted once this many have gathered. */
export const REPOST_BATCH = RECV_DEPTH / 4;

/** My posted receives and the credit total the peer has to learn. */
export class ReceiveCredits {
  readonly #lib: UrmaLib;
  readonly #jetty: Jetty;
  readonly #auxSeg: Segment;
  readonly #health: EndpointHealth;
  readonly #batch: UrmaRecvBatch;
  /** Receives completed and not yet reposted. */
  #consumed = RECV_DEPTH;
  /** Receives posted since the jetty exists (mod 2^32): the credit total the peer reads. */
  #postedTotal = 0;
  /** True while the peer has not been sent the current `#postedTotal`. */
  #publishPending = false;

  /** Posts {@link RECV_DEPTH} receives on `jetty` into the receive buffer of `auxSeg`. */
  constructor(lib: UrmaLib, jetty: Jetty, auxSeg: Segment, health: EndpointHealth) {
    this.#lib = lib;
    this.#jetty = jetty;
    this.#auxSeg = auxSeg;
    this.#health = health;
    this.#batch = new UrmaRecvBatch(lib, RECV_DEPTH);
    this.repost();
  }

  /** Receives completed and not yet reposted. */
  get consumed(): number {
    return this.#consumed;
  }

  /** Counts one completed receive. */
  onReceive(): void {
    this.#consumed++;
  }

  /** Reposts when a batch of receives was consumed. */
  repostBatched(): void {
    if (this.#consumed >= REPOST_BATCH) this.repost();
  }

  /** Reposts every consumed receive (one post) and marks the new total for publication. */
  repost(): void {
    const count = this.#consumed;
    if (count === 0 || this.#health.closed) return;
    const batch = this.#batch, addr = this.#auxSeg.address + AUX_RECV;
    batch.reset();
    for (let k = 0; k < count; k++) batch.recv(this.#auxSeg, addr, AUX_RECV_LEN, 0);
    const rc = batch.post(this.#jetty);
    this.#consumed = 0;
    if (rc !== 0) {
      this.#health.fail(`urma_post_jetty_recv_wr: ${statusName(rc)} (${this.#lib.lastError()})`);
      return;
    }
    this.#postedTotal = (this.#postedTotal + count) >>> 0;
    this.#publishPending = true;
  }

  /**
   * Writes my receive total into the peer's fabric page at `creditWord` (a remote offset) when
   * it changed and the send side has room; posts at once. The write is signaled: returns its
   * sequence (the caller looks at the peer's doorbell once more when it completed), or -1 when
   * nothing was written.
   */
  publish(sendSide: UrmaSendSide, creditWord: number): number {
    if (!this.#publishPending || this.#health.failure !== null) return -1;
    if (sendSide.postInternalWord(creditWord, this.#postedTotal, 0, -1, true) !== OK) return -1;
    this.#publishPending = false;
    const seq = sendSide.lastSeq;
    sendSide.post();
    return seq;
  }
}
