/**
 * The hub's wake jetty: how this process wakes its own wait on the JFCE (local work arrived, a
 * session left). `ring()` posts a zero-length SEND from the jetty to itself; its receive completes
 * on the hub's JFC, which makes the armed JFCE readable — the same path a peer's announcement
 * takes, so nothing outside liburma's ABI is needed. RM mode (it talks to itself).
 * Control path at creation; `ring` posts one request and allocates nothing. One JS thread.
 * @module
 */
import { URMA_ACCESS, URMA_TM } from "../../ffi/symbols/liburma.ts";
import { RESERVED_WR_ID } from "../fabric.ts";
import { type CrReader, UrmaRecvBatch, UrmaSendBatch } from "./data_path.ts";
import type { UrmaHub } from "./hub.ts";
import type { CompletionSink, HubBinding, HubJfc } from "./hub_binding.ts";
import { type Jetty, type Jfr, randomToken, type TargetJetty } from "./jetty.ts";
import type { ImportedSegment, Segment } from "./segment.ts";

const DEPTH = 16;
const RECV_BYTES = 64;

/** A jetty that sends to itself. */
export class WakeJetty implements CompletionSink {
  /** Simulator objects it holds (JFR, jetty, segment, its import, the imported self). */
  static readonly OBJECTS = 5;
  readonly #hub: UrmaHub;
  readonly #home: HubJfc;
  readonly #jfr: Jfr;
  readonly #jetty: Jetty;
  readonly #seg: Segment;
  readonly #selfSeg: ImportedSegment;
  readonly #self: TargetJetty;
  readonly #binding: HubBinding;
  readonly #send: UrmaSendBatch;
  readonly #recv: UrmaRecvBatch;
  /** Rings not reaped yet. */
  #inFlight = 0;
  /** Receives consumed and not reposted. */
  #consumed = 0;
  #closed = false;

  constructor(hub: UrmaHub) {
    this.#hub = hub;
    const ctx = hub.ctx, token = randomToken();
    this.#home = hub.placeJetty();
    try {
      const jfc = this.#home.jfc;
      this.#jfr = ctx.createJfr(jfc, { depth: DEPTH, token, transMode: URMA_TM.RM });
      this.#jetty = ctx.createJetty(jfc, this.#jfr, { depth: DEPTH, maxSge: 1 });
      this.#seg = ctx.registerSegment(new Uint8Array(DEPTH * RECV_BYTES), {
        token,
        access: URMA_ACCESS.LOCAL_ONLY,
      });
      this.#selfSeg = ctx.importSegment(this.#seg.descriptor, token); // segments before jetties
      this.#self = ctx.importJetty(this.#jetty.address, token);
      this.#send = new UrmaSendBatch(hub.lib, 1, 1);
      this.#recv = new UrmaRecvBatch(hub.lib, DEPTH);
      this.#consumed = DEPTH;
      this.#repost();
      this.#binding = hub.bind(this.#jetty.address.id, this.#home, this);
    } catch (e) {
      this.close();
      throw e;
    }
  }

  /** The hub JFC it completes on. */
  get home(): HubJfc {
    return this.#home;
  }

  /** Wakes the hub's wait: one zero-length SEND to myself (skipped while DEPTH are unreaped). */
  ring(): void {
    if (this.#inFlight >= DEPTH - 1) return; // the JFC holds unreaped rings: the fd is readable
    const batch = this.#send;
    batch.reset();
    batch.send(this.#self, 0, RESERVED_WR_ID.internal, 0);
    if (batch.post(this.#jetty) === 0) this.#inFlight++;
  }

  onCompletion(records: CrReader, i: number): void {
    if (!records.isRecv(i)) return; // an error of a ring (e.g. no receive left): nothing to do
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    this.#consumed++;
  }

  afterReap(): void {
    if (this.#consumed >= DEPTH / 2) this.#repost();
  }

  onJfcFailure(): void {}

  #repost(): void {
    const batch = this.#recv;
    batch.reset();
    for (let k = 0; k < this.#consumed; k++) {
      batch.recv(this.#seg, this.#seg.address + k * RECV_BYTES, RECV_BYTES, 0);
    }
    if (batch.post(this.#jetty) === 0) this.#consumed = 0;
  }

  /** Deletes the jetty and its objects. Safe twice. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#binding) this.#hub.unbind(this.#binding);
    for (const h of [this.#self, this.#selfSeg, this.#jetty, this.#jfr, this.#seg]) {
      try {
        h?.close();
      } catch { /* the context's close reports what matters */ }
    }
    this.#hub.unplaceJetty(this.#home);
  }
}
