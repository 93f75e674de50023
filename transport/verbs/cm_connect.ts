/**
 * The active side of rdma_cm, in two steps so that the endpoint's QP is built between them on
 * the device the address resolved to (no callback):
 * 1. {@link cmResolveRoute}: IDLE → ADDR_RESOLVING → ROUTE_RESOLVING → a {@link ResolvedRoute}
 *    naming the local device and port;
 * 2. {@link ResolvedRoute.connect} with the prepared QP: CONNECTING → (the server's accept is
 *    checked, the QP brought up) → ESTABLISHED.
 * One deadline covers both steps. Failures reject with HANDSHAKE naming the state, the C call or
 * the CM event, and what to check; the CM id is destroyed then. Control path; one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { CmConnection } from "./cm.ts";
import { type CmEvent, type CmEventLoop, EV } from "./cm_events.ts";
import { cmCheck, cmIdDevice, cmIdPort, cmStatusText, rejectReason, sockaddrIn } from "./cm_lib.ts";
import { cmBringUp, connParam } from "./cm_qp.ts";
import type { QpTuning, QueuePair } from "./qp.ts";

/** Longest single rdma_resolve_addr step (it is retried within the connect deadline). */
const RESOLVE_STEP_MS = 500;
/** Marks a verbus reject's private data (the server's reason follows). */
const REJECT_TAG = "VBRJ";

/** Where an active connect goes. */
export interface RouteSpec {
  dst: string;
  port: number;
  /** Local RDMA address to bind (picks the device the traffic leaves from). */
  src?: string;
  /** Deadline of the whole connect (both steps), and of each resolve step. */
  timeoutMs: number;
}

/** What the second step needs. */
export interface ConnectSpec {
  /** The QP to connect (in RESET; brought up once the server accepted). */
  qp: QueuePair;
  /** Sent with the connect request (≤ 56 bytes on RoCE/IB). */
  privateData: Uint8Array;
  tuning: QpTuning;
  /** Checks the server's accept private data; a string says why it is not acceptable. */
  checkResponse(data: Uint8Array): string | undefined;
}

/** A CM id whose address and route resolved: the device to build the QP on, then `connect`. */
export class ResolvedRoute {
  readonly #timer: ReturnType<typeof setTimeout>;
  #onEvent: ((ev: CmEvent) => void) | null = null;
  #onFailure: ((error: VerbusError) => void) | null = null;

  /** @internal made by cmResolveRoute. */
  constructor(
    readonly conn: CmConnection,
    /** The local RDMA device ("rxe0"). */
    readonly device: string,
    /** Its port (1-based). */
    readonly port: number,
    deadline: number,
    timeoutMs: number,
  ) {
    this.#timer = setTimeout(
      () =>
        this.#fail(
          `rdma_cm connect to ${conn.peer} timed out after ${timeoutMs} ms in state ${conn.state}`,
        ),
      Math.max(1, deadline - performance.now()),
    );
    conn.loop.on(conn.id, (ev) => {
      if (this.#onEvent) this.#onEvent(ev);
      else conn.handleEvent(ev);
    });
  }

  #fail(message: string): void {
    clearTimeout(this.#timer);
    this.conn.to("FAILED", message);
    this.conn.close();
    this.#onFailure?.(new VerbusError("HANDSHAKE", message));
    this.#onFailure = null;
  }

  /** Connects `spec.qp`; resolves with the ESTABLISHED connection (then owned by the caller). */
  connect(spec: ConnectSpec): Promise<CmConnection> {
    const { conn } = this, lib = conn.loop.lib, peer = conn.peer;
    return new Promise((resolve, reject) => {
      if (conn.state !== "ROUTE_RESOLVING") {
        return reject(
          new VerbusError("HANDSHAKE", `rdma_cm ${peer}: ${conn.reason || conn.state}`),
        );
      }
      this.#onFailure = reject;
      const step = (fn: () => void) => {
        try {
          fn();
        } catch (e) {
          this.#fail(`rdma_cm connect to ${peer} (${conn.state}): ${(e as Error).message}`);
        }
      };
      this.#onEvent = (ev) =>
        step(() => {
          if (conn.state !== "CONNECTING") return conn.handleEvent(ev);
          if (ev.type === EV.CONNECT_RESPONSE) {
            const why = spec.checkResponse(ev.data);
            if (why) {
              return this.#fail(`${peer} answered the connect with an invalid accept: ${why}`);
            }
            cmBringUp(lib, conn.id, spec.qp, spec.tuning);
            cmCheck(lib, lib.cm.symbols.rdma_establish(conn.id), "rdma_establish", peer);
            clearTimeout(this.#timer);
            this.#onEvent = null;
            this.#onFailure = null;
            conn.to("ESTABLISHED");
            resolve(conn);
          } else if (ev.type === EV.REJECTED) {
            this.#fail(`connection to ${peer} rejected: ${rejectText(ev)}`);
          } else {
            this.#fail(
              `${peer} unreachable over RDMA (${ev.name}, ${
                cmStatusText(ev.status)
              }): is a verbus fabric listening there?`,
            );
          }
        });
      step(() => {
        const { param, keep } = connParam(lib, spec.qp, spec.privateData, spec.tuning);
        conn.to("CONNECTING");
        cmCheck(lib, lib.cm.symbols.rdma_connect(conn.id, param), "rdma_connect", peer);
        void keep;
      });
    });
  }

  /** Gives up (destroys the CM id). Safe twice; a no-op once connected. */
  close(): void {
    if (this.conn.state === "ESTABLISHED") return;
    clearTimeout(this.#timer);
    this.conn.close();
  }
}

/** The server's reason from a REJECTED event (ours carry it as text), or the IB reason. */
function rejectText(ev: CmEvent): string {
  const dec = new TextDecoder();
  const ours = ev.data.length > REJECT_TAG.length &&
    dec.decode(ev.data.subarray(0, REJECT_TAG.length)) === REJECT_TAG;
  const text = ours ? dec.decode(ev.data.subarray(REJECT_TAG.length)).replace(/\0.*$/s, "") : "";
  return text || rejectReason(ev.status);
}

/**
 * Resolves the address and route of `spec.dst:spec.port` (binding `spec.src` when given).
 * Rejects with HANDSHAKE naming what to check.
 */
export function cmResolveRoute(loop: CmEventLoop, spec: RouteSpec): Promise<ResolvedRoute> {
  const { lib } = loop, s = lib.cm.symbols;
  const peer = `${spec.dst}:${spec.port}`;
  const id: NonNullPtr = loop.createId(`connect to ${peer}`);
  const conn = new CmConnection(loop, id, peer, "IDLE");
  const start = performance.now(), deadline = start + spec.timeoutMs;
  // Address resolution in short steps: on a cold neighbour table the kernel may finish it only
  // at the step's deadline, so a long single step turns into a long first connect.
  const stepMs = Math.min(RESOLVE_STEP_MS, spec.timeoutMs);
  return new Promise((resolve, reject) => {
    const fail = (msg: string) => {
      clearTimeout(timer);
      conn.to("FAILED", msg);
      conn.close();
      reject(new VerbusError("HANDSHAKE", msg));
    };
    const timer = setTimeout(
      () =>
        fail(
          `rdma_cm connect to ${peer} timed out after ${spec.timeoutMs} ms in state ${conn.state}`,
        ),
      spec.timeoutMs,
    );
    const step = (fn: () => void) => {
      try {
        fn();
      } catch (e) {
        fail(`rdma_cm connect to ${peer} (${conn.state}): ${(e as Error).message}`);
      }
    };
    const resolveAddr = () => {
      const src = spec.src ? sockaddrIn(spec.src, 0) : null;
      const hint = spec.src
        ? `is ${spec.src} an RDMA interface address?`
        : `is ${spec.dst} reachable?`;
      cmCheck(
        lib,
        s.rdma_resolve_addr(id, src, sockaddrIn(spec.dst, spec.port), stepMs),
        "rdma_resolve_addr",
        `${spec.src ?? "any"} → ${peer}`,
        hint,
      );
    };
    loop.on(id, (ev) =>
      step(() => {
        if (conn.state === "ADDR_RESOLVING") {
          if (ev.type === EV.ADDR_RESOLVED) {
            conn.to("ROUTE_RESOLVING");
            cmCheck(lib, s.rdma_resolve_route(id, spec.timeoutMs), "rdma_resolve_route", peer);
          } else if (
            ev.type === EV.ADDR_ERROR && (ev.status === -110 || ev.status === -61) &&
            performance.now() - start + stepMs < spec.timeoutMs
          ) {
            resolveAddr(); // neighbour not resolved yet: ask again
          } else if (ev.type === EV.ADDR_ERROR) {
            fail(
              `address resolve failed (${
                cmStatusText(ev.status)
              }): is ${spec.dst} an RDMA interface address${
                spec.src ? ` reachable from ${spec.src}` : ""
              }?`,
            );
          } else fail(`unexpected ${ev.name} while resolving the address of ${spec.dst}`);
        } else if (conn.state === "ROUTE_RESOLVING") {
          if (ev.type !== EV.ROUTE_RESOLVED) {
            return fail(
              `route to ${spec.dst} failed (${ev.name}, ${
                cmStatusText(ev.status)
              }): check routing from ${spec.src ?? "this host"} to ${spec.dst}`,
            );
          }
          const device = cmIdDevice(lib, id);
          if (!device) return fail(`address ${spec.dst} resolved to no RDMA device`);
          clearTimeout(timer);
          resolve(new ResolvedRoute(conn, device, cmIdPort(lib, id), deadline, spec.timeoutMs));
        } else conn.handleEvent(ev);
      }));
    step(() => {
      conn.to("ADDR_RESOLVING");
      resolveAddr();
    });
  });
}
