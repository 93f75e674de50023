/**
 * Control path of one verbs session side: every native resource its endpoint uses, created in
 * one place and released in one call (the device context closes its children first: QP, then
 * CQs and the completion channel, MRs, PD).
 * ```
 *  ibv_context (own open of the device the CM id resolved to)
 *   └ PD ─┬ MR region  (the session region: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ, registered once)
 *         ├ MR bounce  (local only: copies of write() sources, inline staging, handshake probes)
 *         └ RC QP ── send CQ ─┐  (event mode: both CQs on one completion channel)
 *                    recv CQ ─┘  (event mode only; receives are zero-length, for immediates)
 * ```
 * Both buffers are JS Uint8Arrays kept referenced by their MRs: they never move, and stay valid
 * memory even after deregistration, so a late access can never touch unmapped memory.
 * @module
 */
import { IBV_ACCESS } from "../../ffi/symbols/libibverbs.ts";
import type { Context } from "./context.ts";
import type { CompletionChannel, CompletionQueue } from "./cq.ts";
import { openDevice } from "./device.ts";
import type { MemoryRegion } from "./mr.ts";
import type { QueuePair } from "./qp.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import { SESSION_QP_ACCESS } from "./cm_qp.ts";

/** The shape of one endpoint's resources. */
export interface EndpointShape {
  /** Bytes of the session region (the layout's size). */
  regionSize: number;
  /** Bytes of the bounce area. */
  bounceSize: number;
  /** Send queue depth (a power of two). */
  sqDepth: number;
  /** Receive queue depth (event mode). */
  rqDepth: number;
  /** Most SGEs per send WR. */
  maxSge: number;
  /** Inline data asked for (the QP may grant less; see `qp.cap.maxInlineData`). */
  maxInline: number;
  /** Own wait mode: event mode gets a completion channel and a receive CQ. */
  events: boolean;
}

/** The native resources of one endpoint. */
export class EndpointResources {
  private constructor(
    readonly ctx: Context,
    readonly channel: CompletionChannel | null,
    readonly sendCq: CompletionQueue,
    readonly recvCq: CompletionQueue,
    readonly qp: QueuePair,
    readonly region: MemoryRegion,
    readonly bounce: MemoryRegion,
    readonly shape: EndpointShape,
  ) {}

  /** Opens `device` and creates everything; on any failure, what was made is released and the error thrown. */
  static open(lib: VerbsLib, device: string, shape: EndpointShape): EndpointResources {
    const ctx = openDevice(lib, device);
    try {
      const pd = ctx.allocPd();
      const region = pd.registerBuffer(new Uint8Array(shape.regionSize), SESSION_QP_ACCESS);
      const bounce = pd.registerBuffer(new Uint8Array(shape.bounceSize), IBV_ACCESS.LOCAL_WRITE);
      const channel = shape.events ? ctx.createCompChannel() : null;
      const sendCq = ctx.createCq(shape.sqDepth + 16, channel);
      const recvCq = shape.events ? ctx.createCq(shape.rqDepth + 16, channel) : sendCq;
      const qp = pd.createQp({
        sendCq,
        recvCq,
        maxSendWr: shape.sqDepth,
        maxRecvWr: shape.events ? shape.rqDepth : 1,
        maxSendSge: shape.maxSge,
        maxRecvSge: 1,
        maxInlineData: shape.maxInline,
      });
      return new EndpointResources(ctx, channel, sendCq, recvCq, qp, region, bounce, shape);
    } catch (e) {
      try {
        ctx.close();
      } catch { /* the creation error is the one worth reporting */ }
      throw e;
    }
  }

  /** The session region (registered). */
  get local(): Uint8Array {
    return this.region.buffer;
  }

  /** Releases everything (children first). Throws the first destroy error. Safe twice. */
  close(): void {
    this.ctx.close();
  }
}
