/**
 * The listening side of rdma_cm (the state machine in cm.ts, the event loop in cm_events.ts): a {@link CmListener}
 * bound to one RDMA address, and each connect request as a {@link CmRequest} the provider
 * accepts (bringing its own QP up towards the requester) or rejects with a reason the client
 * sees in its REJECTED event.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { be16, cmCheck, cmIdDevice, sockaddrIn } from "./cm_lib.ts";
import { cmBringUp, connParam } from "./cm_qp.ts";
import { CmConnection } from "./cm.ts";
import { type CmEventLoop, EV } from "./cm_events.ts";
import type { QpTuning, QueuePair } from "./qp.ts";

/** A connect request as the listener sees it: accept with a QP, or reject with a reason. */
export class CmRequest {
  constructor(readonly conn: CmConnection, readonly data: Uint8Array) {}

  /** The device the request arrived on. */
  get device(): string | null {
    return cmIdDevice(this.conn.loop.lib, this.conn.id);
  }

  /** Brings `qp` up towards the requester and accepts (`rdma_accept`). Throws on failure (then reject). */
  accept(qp: QueuePair, privateData: Uint8Array, tuning: QpTuning): void {
    const { lib } = this.conn.loop;
    cmBringUp(lib, this.conn.id, qp, tuning);
    const { param, keep } = connParam(lib, qp, privateData, tuning);
    this.conn.to("ACCEPTING");
    cmCheck(lib, lib.cm.symbols.rdma_accept(this.conn.id, param), "rdma_accept", this.conn.peer);
    void keep;
  }

  /** Rejects with `reason` (sent as private data) and destroys the id. Safe after accept failed. */
  reject(reason: string): void {
    const { lib } = this.conn.loop;
    const text = new TextEncoder().encode(`VBRJ${reason}`).subarray(0, 140);
    if (this.conn.state === "REQUESTED" || this.conn.state === "ACCEPTING") {
      lib.cm.symbols.rdma_reject(this.conn.id, text, text.length);
    }
    this.conn.to("FAILED", reason);
    this.conn.close();
  }
}

/** A listening CM id bound to one RDMA address. */
export class CmListener {
  readonly conn: CmConnection;
  /** The device the address belongs to. */
  readonly device: string;
  /** The bound port (the real one when 0 was asked for). */
  readonly port: number;

  /**
   * Binds `addr:port` and listens; every connect request goes to `onRequest`, which must
   * accept or reject it. Throws a NativeError naming the call and what to check.
   */
  constructor(
    readonly loop: CmEventLoop,
    readonly addr: string,
    port: number,
    backlog: number,
    onRequest: (req: CmRequest) => void,
  ) {
    const { lib } = loop, s = lib.cm.symbols;
    const id = loop.createId(`listen on ${addr}:${port}`);
    this.conn = new CmConnection(loop, id, `${addr}:${port}`, "IDLE");
    try {
      cmCheck(
        lib,
        s.rdma_bind_addr(id, sockaddrIn(addr, port)),
        "rdma_bind_addr",
        `${addr}:${port}`,
        `is ${addr} an RDMA interface address, and is port ${port} free?`,
      );
      cmCheck(lib, s.rdma_listen(id, backlog), "rdma_listen", `${addr}:${port}`);
      const dev = cmIdDevice(lib, id);
      if (!dev) {
        throw new VerbusError(
          "NO_DEVICE",
          `${addr} is bound to no RDMA device: is it an RDMA interface address?`,
        );
      }
      this.device = dev;
      this.port = be16(s.rdma_get_src_port(id));
      this.conn.to("LISTENING");
    } catch (e) {
      this.conn.close();
      throw e;
    }
    loop.on(id, (ev) => {
      if (ev.type !== EV.CONNECT_REQUEST) return;
      const child = new CmConnection(loop, ev.id, `request on ${addr}:${this.port}`, "REQUESTED");
      loop.on(ev.id, (late) => child.handleEvent(late));
      const req = new CmRequest(child, ev.data);
      try {
        onRequest(req);
      } catch (err) {
        req.reject(`server failed to accept: ${(err as Error).message}`);
      }
    });
  }

  /** Stops listening (destroys the id). Safe twice. */
  close(): void {
    this.conn.close();
  }
}
