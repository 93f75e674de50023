/**
 * One rdma_cm id of the verbs fabric and its explicit state machine:
 * ```
 *  active:  IDLE → ADDR_RESOLVING → ROUTE_RESOLVING → CONNECTING → ESTABLISHED → DISCONNECTED
 *  passive: REQUESTED → ACCEPTING → ESTABLISHED → DISCONNECTED          (listener: LISTENING)
 *  any state → FAILED (with the reason) or CLOSED (destroyed here)
 * ```
 * The active side's steps are in cm_connect.ts, the listener's in cm_listen.ts, the event
 * channel in cm_events.ts. QPs are verbus' own (see cm_qp.ts). Control path; one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import { cmStatusText } from "./cm_lib.ts";
import { type CmEvent, type CmEventLoop, EV } from "./cm_events.ts";

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

  /** Handles the events of an accepting or established id (establishment, disconnects, errors). */
  handleEvent(ev: CmEvent): void {
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
