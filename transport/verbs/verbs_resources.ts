/**
 * Control path of one verbs session side: the native resources its endpoint owns, created in
 * one place and released in one call. The device context, the completion channel and the CQ
 * are the process's (hub.ts), shared by every session on the device; the session owns its PD
 * (so its rkeys reach only its own memory), its MRs and its RC QP:
 * ```
 *  hub: ibv_context ── comp channel ── CQ (shared, send + receive)
 *   └ PD (this session) ─┬ MR region  (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ): the rpc
 *                        │             region, then the inbound write log and its ack word
 *                        │             (transport/write_log.ts) when `logBytes` > 0
 *                        ├ MR bounce  (local only: copies of write() sources, inline staging)
 *                        ├ MR outbox  (local only: the batches of the outbound write log)
 *                        └ RC QP ── the hub's CQ for both queues; a small receive queue of
 *                                   zero-length receives that catch the peer's WRITE_WITH_IMM
 * ```
 * Both buffers are JS Uint8Arrays kept referenced by their MRs: they never move, and stay valid
 * memory even after deregistration, so a late access can never touch unmapped memory.
 * @module
 */
import { IBV_ACCESS } from "../../ffi/symbols/libibverbs.ts";
import type { Context } from "./context.ts";
import type { HubMember, VerbsHub } from "./hub.ts";
import type { MemoryRegion } from "./mr.ts";
import type { ProtectionDomain } from "./pd.ts";
import type { QueuePair } from "./qp.ts";
import { SESSION_QP_ACCESS } from "./cm_qp.ts";
import type { WcReader } from "./wc_reader.ts";
import { LOG_TAIL_BYTES } from "../write_log.ts";

/** The shape of one endpoint's resources. */
export interface EndpointShape {
  /** Bytes of the session region (the layout's size). */
  regionSize: number;
  /** Bytes of the bounce area. */
  bounceSize: number;
  /** Bytes of each direction's write log (0: no log, every write is its own work request). */
  logBytes: number;
  /** Send queue depth (a power of two). */
  sqDepth: number;
  /** Receive queue depth (zero-length receives for the peer's immediates). */
  rqDepth: number;
  /** Most signaled send WRs in flight (this endpoint's share of the shared CQ). */
  signaledBudget: number;
  /** Most SGEs per send WR. */
  maxSge: number;
  /** Inline data asked for (the QP may grant less; see `qp.cap.maxInlineData`). */
  maxInline: number;
  /** Event mode (sleep on the hub's channel when idle) rather than busy-polling. */
  events: boolean;
}

/** Completions one endpoint of `shape` may have outstanding in the shared CQ. */
export function cqShare(shape: EndpointShape): number {
  return shape.rqDepth + shape.signaledBudget;
}

/** What handles the completions of one endpoint's QP (the endpoint, once it exists). */
export interface CompletionHandler {
  /** A send completion of its QP (see {@link HubMember.onSend}). */
  onSend: HubMember["onSend"];
  /** A receive completion of its QP: a peer's WRITE_WITH_IMM (no data), or a flushed receive. */
  onReceive(status: number): void;
}

/** The endpoint's place in the hub: forwards to its handler once one is attached. */
class MemberSlot implements HubMember {
  handler: CompletionHandler | null = null;
  constructor(readonly qpNum: number) {}
  onSend(wc: WcReader, k: number): void {
    this.handler?.onSend(wc, k);
  }
  onReceive(status: number): void {
    this.handler?.onReceive(status);
  }
}

/** The native resources of one endpoint. */
export class EndpointResources {
  /** The endpoint's token in the hub (peers put it in their immediates). */
  readonly token: number;
  readonly #slot: MemberSlot;
  #joined = true;
  #polling = false;

  private constructor(
    /** The process's hub for the device (shared CQ and channel). */
    readonly hub: VerbsHub,
    readonly pd: ProtectionDomain,
    readonly qp: QueuePair,
    readonly region: MemoryRegion,
    readonly bounce: MemoryRegion,
    /** The outbound write log's batches (null without a log). */
    readonly outbox: MemoryRegion | null,
    readonly shape: EndpointShape,
  ) {
    this.#slot = new MemberSlot(qp.qpNum);
    this.token = hub.join(this.#slot, cqShare(shape));
  }

  /**
   * Routes this QP's completions to `handler` from now on; a poll-mode endpoint makes the hub
   * wait by busy-polling while it lives.
   */
  attach(handler: CompletionHandler): void {
    this.#slot.handler = handler;
    if (!this.shape.events && !this.#polling && this.#joined) {
      this.#polling = true;
      this.hub.polling(1);
    }
  }

  /** Creates everything on `hub`'s device; on any failure, what was made is released and the error thrown. */
  static open(hub: VerbsHub, shape: EndpointShape): EndpointResources {
    const pd = hub.ctx.allocPd();
    try {
      const region = pd.registerBuffer(new Uint8Array(registeredSize(shape)), SESSION_QP_ACCESS);
      const bounce = pd.registerBuffer(new Uint8Array(shape.bounceSize), IBV_ACCESS.LOCAL_WRITE);
      const outbox = shape.logBytes > 0
        ? pd.registerBuffer(new Uint8Array(shape.logBytes), IBV_ACCESS.LOCAL_WRITE)
        : null;
      return new EndpointResources(hub, pd, newQp(hub, pd, shape), region, bounce, outbox, shape);
    } catch (e) {
      closeQuietly(pd);
      throw e;
    }
  }

  /**
   * The PD and MRs of a finished session with a new QP (in RESET) — no registration: the old QP
   * is destroyed first (its peer has no way into this PD any more) and both buffers are zeroed
   * (nothing of the old session is readable by the next peer). `old` is spent; on failure
   * everything is released and the error thrown.
   */
  static renew(old: EndpointResources): EndpointResources {
    old.#leave();
    try {
      old.qp.close();
      old.region.buffer.fill(0);
      old.bounce.buffer.fill(0);
      old.outbox?.buffer.fill(0);
      const qp = newQp(old.hub, old.pd, old.shape);
      return new EndpointResources(
        old.hub,
        old.pd,
        qp,
        old.region,
        old.bounce,
        old.outbox,
        old.shape,
      );
    } catch (e) {
      closeQuietly(old.pd);
      throw e;
    }
  }

  #leave(): void {
    if (!this.#joined) return;
    this.#joined = false;
    this.#slot.handler = null;
    this.hub.leave(this.#slot, cqShare(this.shape));
    if (this.#polling) this.hub.polling(-1);
    this.#polling = false;
  }

  /** The device context (the hub's). */
  get ctx(): Context {
    return this.hub.ctx;
  }

  /** The session's rpc region (registered; the write log follows it in the same MR). */
  get local(): Uint8Array {
    return this.region.buffer.subarray(0, this.shape.regionSize);
  }

  /**
   * Leaves the hub (later completions of the QP are strays) and releases the QP, MRs and PD
   * (children first). Throws the first destroy error. Safe twice.
   */
  close(): void {
    this.#leave();
    this.pd.close();
  }
}

/** Bytes of the region MR of `shape`: the rpc region, then the inbound log and its tail. */
export function registeredSize(shape: EndpointShape): number {
  return regionExtent(shape.regionSize, shape.logBytes);
}

/** Bytes a region MR covers: an rpc region of `rpcSize`, then a `logBytes` log and its tail. */
export function regionExtent(rpcSize: number, logBytes: number): number {
  return rpcSize + (logBytes > 0 ? logBytes + LOG_TAIL_BYTES : 0);
}

function newQp(hub: VerbsHub, pd: ProtectionDomain, shape: EndpointShape): QueuePair {
  return pd.createQp({
    sendCq: hub.cq,
    recvCq: hub.cq,
    maxSendWr: shape.sqDepth,
    maxRecvWr: shape.rqDepth,
    maxSendSge: shape.maxSge,
    maxRecvSge: 1,
    maxInlineData: shape.maxInline,
  });
}

function closeQuietly(pd: ProtectionDomain): void {
  try {
    pd.close();
  } catch { /* the creation error is the one worth reporting */ }
}
