/**
 * A URMA port: one session side's jetty (with its JFR), taken from the process's hub pool
 * (jetty_pool.ts) before the region sizes are known (the client takes it when its provider is
 * created, so its jetty can go in the hello). A port is handed over once to the side being
 * prepared (handshake.ts), or closed (the jetty is deleted). Control path: allocates and throws;
 * one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { toHex } from "../../util/hex.ts";
import { RECV_DEPTH, SGE_PER_WR, SQ_DEPTH } from "./endpoint_config.ts";
import { describeJetty } from "./description.ts";
import { UrmaHub } from "./hub.ts";
import type { CompletionSink, HubBinding } from "./hub_binding.ts";
import { CQES_PER_JETTY, type PreparedJetty } from "./jetty_pool.ts";
import type { UrmaMode } from "./jetty.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Where a jetty is, as JSON (eid as 32 hex digits). */
export interface JettyAddress {
  eid: string;
  uasid: number;
  id: number;
}

/** How to open a port. */
export interface UrmaPortOptions {
  /** Device name (default: the first). */
  device?: string;
  /** EID index on the device (default 0). */
  eidIndex?: number;
  mode: UrmaMode;
}

/** What a port hands over: the process's hub and this side's prepared jetty. */
export interface UrmaPortParts {
  readonly lib: UrmaLib;
  readonly hub: UrmaHub;
  readonly prepared: PreparedJetty;
  /** The jetty's place in the hub: its readiness token (in the hello / offer) and sink. */
  readonly binding: HubBinding;
  readonly mode: UrmaMode;
  /** The token of the jetty (and of the region segment registered for it). */
  readonly token: number;
}

/** The sink of a jetty with nothing posted yet (no completion can name it). */
const NO_SINK: CompletionSink = {
  onCompletion() {},
  afterReap() {},
  onJfcFailure() {},
};

/** The jetty of one side, until handed over or closed. */
export class UrmaPort {
  #parts: UrmaPortParts | null;

  private constructor(parts: UrmaPortParts) {
    this.#parts = parts;
  }

  /** Takes a jetty from the process's hub (refused when the device's limits are too small). */
  static open(lib: UrmaLib, options: UrmaPortOptions): UrmaPort {
    const hub = UrmaHub.forProcess(lib, options.device, options.eidIndex ?? 0);
    const cap = hub.cap;
    const need = (have: number, want: number, what: string) => {
      if (have < want) {
        throw new VerbusError(
          "NO_DEVICE",
          `${hub.ctx.deviceName}: ${what} is ${have}, verbus needs ${want}`,
        );
      }
    };
    need(cap.maxJfcDepth, CQES_PER_JETTY, "max_jfc_depth");
    need(cap.maxJfsDepth, SQ_DEPTH, "max_jfs_depth");
    need(cap.maxJfrDepth, RECV_DEPTH, "max_jfr_depth");
    need(cap.maxSge, SGE_PER_WR, "max_jfs_sge");
    const prepared = hub.pool.take(options.mode);
    const binding = hub.bind(prepared.jetty.address.id, prepared.home, NO_SINK);
    return new UrmaPort({ lib, hub, prepared, binding, mode: options.mode, token: prepared.token });
  }

  /** The jetty's mode. */
  get mode(): UrmaMode {
    return this.#open().mode;
  }

  /** The jetty's (and region segment's) token. */
  get token(): number {
    return this.#open().token;
  }

  /** This side's readiness token (the peer names it in its kicks). */
  get notify(): number {
    return this.#open().binding.token;
  }

  /** This side's jetty as the library describes it (description.ts: its blob, or the fixed form). */
  get jettyDescription(): Uint8Array {
    return describeJetty(this.#open().prepared.jetty);
  }

  /** This side's jetty as the peer imports it. */
  get address(): JettyAddress {
    const address = this.#open().prepared.jetty.address;
    return { eid: toHex(address.eid), uasid: address.uasid, id: address.id };
  }

  #open(): UrmaPortParts {
    if (this.#parts === null) throw new Error("the URMA port was handed over or closed");
    return this.#parts;
  }

  /** Hands the jetty over (once); from then on the receiver deletes it. */
  handOver(): UrmaPortParts {
    const parts = this.#open();
    this.#parts = null;
    return parts;
  }

  /** Deletes the jetty (unless handed over). Safe twice. */
  close(): void {
    const parts = this.#parts;
    this.#parts = null;
    if (parts) {
      parts.hub.unbind(parts.binding);
      parts.hub.pool.retire(parts.prepared);
    }
  }
}
