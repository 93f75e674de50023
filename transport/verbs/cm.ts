/**
 * rdma_cm connection management for the verbs fabric, every CM event handled by an explicit
 * state machine with a deadline:
 * ```
 *  active:  IDLE → ADDR_RESOLVING → ROUTE_RESOLVING → CONNECTING → ESTABLISHED → DISCONNECTED
 *  passive: REQUESTED → ACCEPTING → ESTABLISHED → DISCONNECTED          (listener: LISTENING)
 *  any state → FAILED (with the reason) or CLOSED (destroyed here)
 * ```
 * The listener side (CmListener, CmRequest) is in cm_listen.ts.
 * One process-wide event channel serves every CM id ({@link CmEventLoop}): its fd is waited on
 * with the helper's `vb_wait_fd` as a nonblocking call (Deno: nonblocking FFI; Bun: a Worker),
 * so the event loop never blocks; once the fd is readable `rdma_get_cm_event` returns at once.
 * Every event is copied (private data included) and acked before it is dispatched, so
 * `rdma_destroy_id` never waits on an unacked event. QPs are verbus' own (see cm_qp.ts).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import {
  RDMA_CM_EVENT_LAYOUT,
  RDMA_CONN_PARAM,
  RDMA_EVENT_CHANNEL,
} from "../../ffi/layouts/rdmacm.ts";
import { IBV_QPS } from "../../ffi/symbols/libibverbs.ts";
import { RDMA_CM_EVENT, RDMA_PS_TCP } from "../../ffi/symbols/librdmacm.ts";
import type { NonNullPtr, Ptr } from "../../ffi/types.ts";
import {
  cmCheck,
  cmIdDevice,
  cmIdPort,
  type CmLib,
  cmStatusText,
  rejectReason,
  sockaddrIn,
} from "./cm_lib.ts";
import { cmBringUp, cmModifyQp, connParam } from "./cm_qp.ts";
import type { QpTuning, QueuePair } from "./qp.ts";

/** A CM event, copied out of librdmacm's struct before the ack. */
export interface CmEvent {
  readonly type: number;
  /** "ESTABLISHED", "REJECTED", ... */
  readonly name: string;
  readonly status: number;
  readonly id: NonNullPtr;
  readonly listenId: Ptr;
  /** The connection private data (empty when the event carries none). */
  readonly data: Uint8Array;
}

/** Longest single rdma_resolve_addr step (it is retried within the connect deadline). */
const RESOLVE_STEP_MS = 500;

/** CM event numbers by name. */
export const EV = Object.fromEntries(RDMA_CM_EVENT.map((n, i) => [n, i])) as Record<
  (typeof RDMA_CM_EVENT)[number],
  number
>;

/** The process-wide CM event channel and the loop that dispatches its events. */
export class CmEventLoop {
  static #instance: CmEventLoop | null = null;
  readonly channel: NonNullPtr;
  readonly fd: number;
  readonly #handlers = new Map<bigint, (ev: CmEvent) => void>();
  readonly #evOut = new BigUint64Array(1);
  #running = false;

  private constructor(readonly lib: CmLib) {
    const ch = lib.cm.symbols.rdma_create_event_channel();
    if (ch === null) cmCheck(lib, -1, "rdma_create_event_channel", "the CM event channel");
    this.channel = ch as NonNullPtr;
    this.fd = lib.ffi.readI32(this.channel, RDMA_EVENT_CHANNEL.fd);
  }

  /** The loop of this process (its channel is created on first use and lives as long). */
  static get(lib: CmLib): CmEventLoop {
    CmEventLoop.#instance ??= new CmEventLoop(lib);
    return CmEventLoop.#instance;
  }

  /** `rdma_create_id` on this channel (RC, port space TCP). */
  createId(what: string): NonNullPtr {
    const out = new BigUint64Array(1);
    cmCheck(
      this.lib,
      this.lib.cm.symbols.rdma_create_id(this.channel, out, null, RDMA_PS_TCP),
      "rdma_create_id",
      what,
    );
    return this.lib.ffi.fromAddress(out[0]) as NonNullPtr;
  }

  /** Routes the events of `id` to `handler` and keeps the loop running while any id is routed. */
  on(id: NonNullPtr, handler: (ev: CmEvent) => void): void {
    this.#handlers.set(this.lib.ffi.address(id), handler);
    if (!this.#running) void this.#run();
  }

  /** Stops routing the events of `id`. */
  off(id: NonNullPtr): void {
    this.#handlers.delete(this.lib.ffi.address(id));
  }

  /** Ids routed right now (tests). */
  get routed(): number {
    return this.#handlers.size;
  }

  async #run(): Promise<void> {
    this.#running = true;
    const h = this.lib.helper.lib;
    try {
      while (this.#handlers.size > 0) {
        const rc = await h.nonblocking.vb_wait_fd(this.fd, 100);
        if (rc < 0) {
          console.error(`verbus: poll on the rdma_cm event channel failed (errno ${-rc})`);
          await new Promise((r) => setTimeout(r, 100));
        } else if (rc > 0) this.#drain();
      }
    } finally {
      this.#running = false;
    }
  }

  #drain(): void {
    const { cm, ffi, helper } = this.lib;
    for (let n = 0; n < 64 && helper.lib.symbols.vb_wait_fd(this.fd, 0) > 0; n++) {
      if (cm.symbols.rdma_get_cm_event(this.channel, this.#evOut) !== 0) return;
      const p = ffi.fromAddress(this.#evOut[0]) as NonNullPtr;
      const L = RDMA_CM_EVENT_LAYOUT, C = L["param.conn"];
      const type = ffi.readU32(p, L.event);
      const dataPtr = ffi.readPtr(p, C + RDMA_CONN_PARAM.private_data);
      const dataLen = ffi.readU8(p, C + RDMA_CONN_PARAM.private_data_len);
      const ev: CmEvent = {
        type,
        name: RDMA_CM_EVENT[type] ?? `event ${type}`,
        status: ffi.readI32(p, L.status),
        id: ffi.readPtr(p, L.id) as NonNullPtr,
        listenId: ffi.readPtr(p, L.listen_id),
        data: dataPtr !== null && dataLen > 0
          ? new Uint8Array(ffi.view(dataPtr, dataLen)).slice()
          : new Uint8Array(0),
      };
      cm.symbols.rdma_ack_cm_event(p);
      const key = type === EV.CONNECT_REQUEST && ev.listenId !== null ? ev.listenId : ev.id;
      const handler = this.#handlers.get(ffi.address(key));
      if (handler) {
        try {
          handler(ev);
        } catch (e) {
          console.error(`verbus: rdma_cm ${ev.name} handler failed: ${(e as Error).message}`);
        }
      } else if (type === EV.CONNECT_REQUEST) {
        cm.symbols.rdma_reject(ev.id, null, 0);
        cm.symbols.rdma_destroy_id(ev.id);
      }
    }
  }
}

/** States of one CM id (see the module doc). */
export type CmState =
  | "IDLE"
  | "ADDR_RESOLVING"
  | "ROUTE_RESOLVING"
  | "CONNECTING"
  | "REQUESTED"
  | "ACCEPTING"
  | "LISTENING"
  | "ESTABLISHED"
  | "DISCONNECTED"
  | "FAILED"
  | "CLOSED";

const NEXT: Readonly<Record<CmState, readonly CmState[]>> = {
  IDLE: ["ADDR_RESOLVING", "LISTENING"],
  ADDR_RESOLVING: ["ROUTE_RESOLVING"],
  ROUTE_RESOLVING: ["CONNECTING"],
  CONNECTING: ["ESTABLISHED"],
  REQUESTED: ["ACCEPTING"],
  ACCEPTING: ["ESTABLISHED"],
  LISTENING: [],
  ESTABLISHED: ["DISCONNECTED"],
  DISCONNECTED: [],
  FAILED: [],
  CLOSED: [],
};

/** One CM id and its state machine. Owned by its endpoint (or listener), which closes it. */
export class CmConnection {
  #state: CmState;
  #reason = "";
  #waiters: ((ok: boolean) => void)[] = [];
  /** Called once when an established connection goes away (peer disconnect, device removal). */
  onDown: ((reason: string) => void) | null = null;

  constructor(
    readonly loop: CmEventLoop,
    readonly id: NonNullPtr,
    readonly peer: string,
    state: CmState,
  ) {
    this.#state = state;
  }

  /** Current state. */
  get state(): CmState {
    return this.#state;
  }

  /** Why the connection failed or went down ("" while fine). */
  get reason(): string {
    return this.#reason;
  }

  /** Moves to `to`; an undeclared transition is a bug and throws. FAILED/CLOSED are always allowed. */
  to(to: CmState, reason = ""): void {
    const from = this.#state;
    if (from === to) return;
    if (to !== "FAILED" && to !== "CLOSED" && !NEXT[from].includes(to)) {
      throw new VerbusError("FABRIC", `rdma_cm ${this.peer}: no transition ${from} → ${to}`);
    }
    if (from === "CLOSED") return;
    this.#state = to;
    if (reason) this.#reason = reason;
    if (to === "ESTABLISHED" || to === "FAILED" || to === "CLOSED" || to === "DISCONNECTED") {
      for (const w of this.#waiters.splice(0)) w(to === "ESTABLISHED");
    }
    if ((to === "DISCONNECTED" || (to === "FAILED" && from === "ESTABLISHED")) && this.onDown) {
      this.onDown(reason);
    }
  }

  /** Resolves true once ESTABLISHED, false when it failed or `timeoutMs` passed first. */
  whenEstablished(timeoutMs: number): Promise<boolean> {
    if (this.#state === "ESTABLISHED") return Promise.resolve(true);
    if (this.#state === "FAILED" || this.#state === "CLOSED" || this.#state === "DISCONNECTED") {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== done);
        if (this.#state !== "ESTABLISHED") {
          this.to("FAILED", `not established within ${timeoutMs} ms (state ${this.#state})`);
        }
        resolve(this.#state === "ESTABLISHED");
      }, timeoutMs);
      const done = (ok: boolean) => {
        clearTimeout(t);
        resolve(ok);
      };
      this.#waiters.push(done);
    });
  }

  /** Handles the events of an established (or accepting) id. */
  handleLate(ev: CmEvent): void {
    if (ev.type === EV.ESTABLISHED && this.#state === "ACCEPTING") this.to("ESTABLISHED");
    else if (ev.type === EV.DISCONNECTED || ev.type === EV.DEVICE_REMOVAL) {
      if (this.#state === "ESTABLISHED") {
        this.to(
          "DISCONNECTED",
          ev.type === EV.DISCONNECTED ? "the peer disconnected" : "the RDMA device was removed",
        );
      } else this.to("FAILED", `${ev.name} before the connection was established`);
    } else if (
      ev.type === EV.CONNECT_ERROR || ev.type === EV.UNREACHABLE || ev.type === EV.REJECTED
    ) {
      this.to("FAILED", `${ev.name} (${cmStatusText(ev.status)})`);
    }
  }

  /** Sends a disconnect request (`rdma_disconnect`) if connected. Never throws. */
  disconnect(): void {
    if (
      this.#state === "ESTABLISHED" || this.#state === "ACCEPTING" || this.#state === "DISCONNECTED"
    ) {
      this.loop.lib.cm.symbols.rdma_disconnect(this.id);
    }
  }

  /** Stops routing events and destroys the id (`rdma_destroy_id`). Safe twice. */
  close(): void {
    if (this.#state === "CLOSED") return;
    this.to("CLOSED");
    this.loop.off(this.id);
    this.loop.lib.cm.symbols.rdma_destroy_id(this.id);
  }
}

/** What an active connect needs. */
export interface ConnectSpec {
  dst: string;
  port: number;
  /** Local RDMA address to bind (picks the device the traffic leaves from). */
  src?: string;
  /** Deadline of the whole connect, and of each resolve step. */
  timeoutMs: number;
  /** Sent with the connect request (≤ 56 bytes on RoCE/IB); called after onDevice. */
  privateData(): Uint8Array;
  tuning: QpTuning;
  /** Called once the address resolved to `device` (port `port`): builds and returns the QP. */
  onDevice(device: string, port: number): QueuePair;
  /** Checks the server's accept private data; a string says why it is not acceptable. */
  checkResponse(data: Uint8Array): string | undefined;
}

/**
 * Connects an RC QP to `dst:port` through rdma_cm. Resolves with the ESTABLISHED connection;
 * rejects with HANDSHAKE naming the state, the C call or the CM event, and what to check.
 */
export function cmConnect(loop: CmEventLoop, spec: ConnectSpec): Promise<CmConnection> {
  const { lib } = loop, s = lib.cm.symbols;
  const peer = `${spec.dst}:${spec.port}`;
  const id = loop.createId(`connect to ${peer}`);
  const conn = new CmConnection(loop, id, peer, "IDLE");
  const start = performance.now();
  // Address resolution in short steps: on a cold neighbour table the kernel may finish it only
  // at the step's deadline, so a long single step turns into a long first connect.
  const stepMs = Math.min(RESOLVE_STEP_MS, spec.timeoutMs);
  let qp: QueuePair | null = null;
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
    loop.on(id, (ev) =>
      step(() => {
        switch (conn.state) {
          case "ADDR_RESOLVING":
            if (ev.type === EV.ADDR_RESOLVED) {
              const dev = cmIdDevice(lib, id);
              if (!dev) return fail(`address ${spec.dst} resolved to no RDMA device`);
              qp = spec.onDevice(dev, cmIdPort(lib, id));
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
            return;
          case "ROUTE_RESOLVING":
            if (ev.type === EV.ROUTE_RESOLVED) {
              cmModifyQp(lib, id, qp!, IBV_QPS.INIT, spec.tuning);
              const { param, keep } = connParam(lib, qp!, spec.privateData(), spec.tuning);
              conn.to("CONNECTING");
              cmCheck(lib, s.rdma_connect(id, param), "rdma_connect", peer);
              void keep;
            } else {fail(
                `route to ${spec.dst} failed (${ev.name}, ${
                  cmStatusText(ev.status)
                }): check routing from ${spec.src ?? "this host"} to ${spec.dst}`,
              );}
            return;
          case "CONNECTING":
            if (ev.type === EV.CONNECT_RESPONSE) {
              const why = spec.checkResponse(ev.data);
              if (why) return fail(`${peer} answered the connect with an invalid accept: ${why}`);
              cmBringUp(lib, id, qp!, spec.tuning);
              cmCheck(lib, s.rdma_establish(id), "rdma_establish", peer);
              clearTimeout(timer);
              conn.to("ESTABLISHED");
              resolve(conn);
            } else if (ev.type === EV.REJECTED) {
              const ours = ev.data.length > 4 &&
                new TextDecoder().decode(ev.data.subarray(0, 4)) === "VBRJ";
              const text = ours
                ? new TextDecoder().decode(ev.data.subarray(4)).replace(/\0.*$/s, "")
                : "";
              fail(`connection to ${peer} rejected: ${text || rejectReason(ev.status)}`);
            } else {
              fail(
                `${peer} unreachable over RDMA (${ev.name}, ${
                  cmStatusText(ev.status)
                }): is a verbus fabric listening there?`,
              );
            }
            return;
          default:
            conn.handleLate(ev);
        }
      }));
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
    step(() => {
      conn.to("ADDR_RESOLVING");
      resolveAddr();
    });
  });
}
