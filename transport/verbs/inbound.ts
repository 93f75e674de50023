/**
 * The wake-up side of a verbs endpoint: the doorbell word the peer's kicks move, and how an
 * idle side waits for the next one.
 *
 * - Poll mode: `wait()` resolves on the next macrotask (the progress loop busy-polls).
 * - Event mode: kicks arrive as RDMA_WRITE_WITH_IMM, each consuming one zero-length receive;
 *   `wait()` arms both CQs and waits on the completion channel off the JS thread, with the
 *   region's `sleeping` word set meanwhile. Receives are reaped and reposted in batches.
 *
 * Data path: nothing allocates per kick. One JS thread (the endpoint's).
 * @module
 */
import { setImmediate } from "node:timers";
import { errnoName } from "../../errors.ts";
import { VB_RECV_DESC } from "../../ffi/layouts/helper.ts";
import { IBV_WC_WR_FLUSH_ERR } from "../../ffi/symbols/libibverbs.ts";
import { FABRIC_HEADER } from "../control_page.ts";
import { wcStatusStr } from "./cq.ts";
import type { VerbsSendPath } from "./send_path.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import type { EndpointResources } from "./verbs_resources.ts";
import { WcReader } from "./wc_reader.ts";

const DOORBELL_WORD = FABRIC_HEADER.doorbell >> 2, SLEEPING_WORD = FABRIC_HEADER.sleeping >> 2;
/** Most receives posted at once (zero-length: they only catch the immediates of kicks). */
const MAX_RECEIVES = 256;
/** Repost once this many receives were consumed. */
const REPOST_BATCH = 16;

/** What the inbound side needs of its endpoint. */
export interface InboundOwner {
  readonly closed: boolean;
  /** Fails the endpoint (`flushed`: a flushed WR, a consequence). */
  fail(reason: string, flushed?: boolean): void;
  /** Posts what is batched right now (a kick included). */
  flushNow(): void;
}

/** Doorbell, receives and waiting of one endpoint. */
export class VerbsInbound {
  readonly #lib: VerbsLib;
  readonly #res: EndpointResources;
  readonly #send: VerbsSendPath;
  readonly #owner: InboundOwner;
  readonly #words: Int32Array;
  readonly #events: boolean;
  readonly #receives = new WcReader(64);
  readonly #recvDescs: Uint8Array;
  readonly #recvSge = new Uint8Array(16);
  readonly #recvBadIndex = new Uint32Array(1);
  #doorbellReaped = 0;
  #receivesPosted = 0;
  #waiting: Promise<boolean> | null = null;

  constructor(
    lib: VerbsLib,
    res: EndpointResources,
    send: VerbsSendPath,
    owner: InboundOwner,
    readonly peerName: string,
  ) {
    this.#lib = lib;
    this.#res = res;
    this.#send = send;
    this.#owner = owner;
    this.#words = new Int32Array(res.local.buffer, res.local.byteOffset, 8);
    this.#events = res.shape.events;
    this.#recvDescs = new Uint8Array(
      Math.min(res.shape.rqDepth, MAX_RECEIVES) * VB_RECV_DESC.$size,
    );
    if (this.#events) this.#repost();
  }

  /** The wait still in progress (close() waits for it), or null. */
  get pendingWait(): Promise<boolean> | null {
    return this.#waiting;
  }

  /** My doorbell word now; in event mode, reaps the receives of the kicks that moved it. */
  doorbell(): number {
    const value = Atomics.load(this.#words, DOORBELL_WORD);
    if (this.#events && value !== this.#doorbellReaped) {
      this.#doorbellReaped = value;
      this.#reapReceives();
    }
    return value;
  }

  /** Reaps receive completions (immediates of kicks) and reposts receives in batches. */
  #reapReceives(): void {
    if (this.#send.released) return;
    const wc = this.#receives;
    const n = this.#lib.helper.lib.symbols.vb_poll_cq(this.#res.recvCq.handle, wc.max, wc.buffer);
    if (n <= 0) return;
    for (let k = 0; k < n; k++) {
      const status = wc.status(k);
      if (status !== 0 && !this.#owner.closed) {
        this.#owner.fail(
          `receive from ${this.peerName} completed with "${
            wcStatusStr(this.#lib, status)
          }" (status ${status})`,
          status === IBV_WC_WR_FLUSH_ERR,
        );
      }
    }
    this.#receivesPosted -= n;
    const capacity = this.#recvDescs.length / VB_RECV_DESC.$size;
    if (this.#send.usable && capacity - this.#receivesPosted >= REPOST_BATCH) this.#repost();
  }

  #repost(): void {
    const k = this.#recvDescs.length / VB_RECV_DESC.$size - this.#receivesPosted;
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

  /** See FabricEndpoint.waitInbound. */
  wait(seen: number, timeoutMs: number): Promise<boolean> {
    if (!this.#send.usable) {
      return new Promise((r) => setTimeout(() => r(false), Math.min(timeoutMs, 50)));
    }
    if (!this.#events) {
      return new Promise((r) =>
        setImmediate(() => r(!this.#owner.closed && this.doorbell() !== seen))
      );
    }
    return this.#waitForEvent(seen, timeoutMs);
  }

  async #waitForEvent(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#waiting) return await this.#waiting;
    this.#owner.flushNow();
    try {
      this.#res.sendCq.reqNotify();
      this.#res.recvCq.reqNotify();
    } catch (e) {
      this.#owner.fail((e as Error).message);
      return false;
    }
    // What arrived before the CQs were armed raises no event: look once more.
    this.#reapReceives();
    this.#send.ring.reap();
    if (
      Atomics.load(this.#words, DOORBELL_WORD) !== seen || this.#send.ring.pendingCompletions > 0
    ) {
      return true;
    }
    Atomics.store(this.#words, SLEEPING_WORD, 1);
    let woke = false;
    try {
      this.#waiting = this.#res.channel!.waitEvent(timeoutMs);
      woke = await this.#waiting;
    } catch (e) {
      if (!this.#owner.closed) {
        this.#owner.fail(`waiting for a completion event failed: ${(e as Error).message}`);
      }
    } finally {
      this.#waiting = null;
      if (!this.#owner.closed) Atomics.store(this.#words, SLEEPING_WORD, 0);
    }
    if (this.#owner.closed) return false;
    this.#reapReceives();
    return woke || Atomics.load(this.#words, DOORBELL_WORD) !== seen;
  }
}
