/**
 * The receive side of a verbs endpoint: the doorbell word the peer's kicks move, the QP's small
 * receive queue that catches them, and how an idle side waits for the next one.
 *
 * - Every kick is an RDMA WRITE_WITH_IMM whose immediate is this endpoint's token in the
 *   process's hub (hub.ts): it consumes one zero-length receive and completes on the shared CQ,
 *   so the hub learns that this endpoint has work. With a write log the kick is the peer's log
 *   batch: its receive completion applies the batch (write_log_link.ts), then moves the doorbell
 *   word here; without one it writes the next doorbell value itself.
 * - Receives are reposted in batches as the hub hands their completions over. When the peer
 *   kicks faster than this side reposts, the QP answers with RNR NAKs and the peer's NIC
 *   retries (rnr_retry 7 = without limit, min_rnr_timer ≈ 0.64 ms): a kick is delayed, never
 *   lost, and nothing hangs, because every consumed receive is a completion the hub reaps.
 * - Waiting is the hub's one wait (poll mode: a macrotask; event mode: the one channel); the
 *   engine uses the hub as the readiness source and never calls `wait()` for a verbs session.
 *
 * Data path: nothing allocates per kick. One JS thread (the endpoint's).
 * @module
 */
import { errnoName } from "../../errors.ts";
import { VB_RECV_DESC } from "../../ffi/layouts/helper.ts";
import { IBV_WC_WR_FLUSH_ERR } from "../../ffi/symbols/libibverbs.ts";
import { FABRIC_HEADER } from "../control_page.ts";
import { wcStatusStr } from "./cq.ts";
import type { VerbsSendPath } from "./send_path.ts";
import type { VerbsWriteLog } from "./write_log_link.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import type { EndpointResources } from "./verbs_resources.ts";

const DOORBELL_WORD = FABRIC_HEADER.doorbell >> 2;

/** What the inbound side needs of its endpoint. */
export interface InboundOwner {
  readonly closed: boolean;
  /** Fails the endpoint (`flushed`: a flushed WR, a consequence). */
  fail(reason: string, flushed?: boolean): void;
  /** Posts what is batched right now (a kick included). */
  flushNow(): void;
  /** Posts what is batched at the end of this job (an acknowledgement of the log). */
  flush(): void;
}

/** Doorbell, receive queue and waiting of one endpoint. */
export class VerbsInbound {
  readonly #lib: VerbsLib;
  readonly #res: EndpointResources;
  readonly #send: VerbsSendPath;
  readonly #owner: InboundOwner;
  readonly #words: Int32Array;
  readonly #recvDescs: Uint8Array;
  readonly #recvSge = new Uint8Array(16);
  readonly #recvBadIndex = new Uint32Array(1);
  readonly #depth: number;
  readonly #repostBatch: number;
  #receivesPosted = 0;
  /** Receives consumed (kicks received) since the endpoint was built (tests, stats). */
  received = 0;

  constructor(
    lib: VerbsLib,
    res: EndpointResources,
    send: VerbsSendPath,
    owner: InboundOwner,
    readonly peerName: string,
    private readonly log: VerbsWriteLog | null = null,
  ) {
    this.#lib = lib;
    this.#res = res;
    this.#send = send;
    this.#owner = owner;
    this.#words = new Int32Array(res.local.buffer, res.local.byteOffset, 8);
    this.#depth = Math.min(res.shape.rqDepth, res.qp.cap.maxRecvWr || res.shape.rqDepth);
    this.#repostBatch = Math.max(1, this.#depth >> 1);
    this.#recvDescs = new Uint8Array(this.#depth * VB_RECV_DESC.$size);
    this.#repost();
  }

  /** Receives posted now (tests). */
  get posted(): number {
    return this.#receivesPosted;
  }

  /** My doorbell word now. */
  doorbell(): number {
    return Atomics.load(this.#words, DOORBELL_WORD);
  }

  /** One receive completion of this QP (from the hub's drain). */
  onReceive(status: number): void {
    this.#receivesPosted--;
    if (status !== 0) {
      if (!this.#owner.closed) {
        this.#owner.fail(
          `receive from ${this.peerName} completed with "${
            wcStatusStr(this.#lib, status)
          }" (status ${status})`,
          status === IBV_WC_WR_FLUSH_ERR,
        );
      }
      return;
    }
    this.received++;
    if (this.log !== null && !this.#owner.closed) {
      const why = this.log.apply();
      if (why !== null) return this.#owner.fail(`${this.peerName} broke the write log: ${why}`);
      Atomics.add(this.#words, DOORBELL_WORD, 1);
      if (this.log.ackOwed) this.#owner.flush();
    }
    if (this.#send.usable && this.#depth - this.#receivesPosted >= this.#repostBatch) {
      this.#repost();
    }
  }

  #repost(): void {
    const k = this.#depth - this.#receivesPosted;
    if (k <= 0) return;
    const rc = this.#lib.helper.lib.symbols.vb_post_recv(
      this.#res.qp.handle,
      this.#recvDescs,
      this.#recvSge,
      k,
      this.#recvBadIndex,
    );
    if (rc !== 0) {
      return this.#owner.fail(
        `ibv_post_recv failed with ${errnoName(rc)} (QP to ${this.peerName})`,
      );
    }
    this.#receivesPosted += k;
  }

  /** See FabricEndpoint.waitInbound: the hub's one wait, until my doorbell moves past `seen`. */
  async wait(seen: number, timeoutMs: number): Promise<boolean> {
    const hub = this.#res.hub, end = performance.now() + timeoutMs;
    this.#owner.flushNow();
    for (;;) {
      if (this.#owner.closed || !this.#send.usable) return false;
      if (this.doorbell() !== seen || this.#send.ring.pendingCompletions > 0) return true;
      const left = Math.ceil(end - performance.now());
      if (left <= 0) return false;
      await hub.wait(hub.doorbell(), left);
      hub.drain();
    }
  }
}
