/**
 * A URMA port: the context, JFCE, JFC, JFR and jetty of one session side, opened before the
 * region sizes are known (the client opens it when its provider is created, so its jetty can go
 * in the hello). A port is handed over once to the side being prepared (handshake.ts), or
 * closed. Control path: allocates and throws; one JS thread.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { URMA_TM } from "../../ffi/symbols/liburma.ts";
import { toHex } from "../../util/hex.ts";
import { UrmaContext } from "./context.ts";
import { JFC_DEPTH, RECV_DEPTH, SGE_PER_WR, SQ_DEPTH } from "./endpoint_config.ts";
import type { Jfc, Jfce } from "./jfc.ts";
import type { Jetty } from "./jetty.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Jetty transport mode: reliable message (one jetty talks to many) or reliable connection (bound). */
export type UrmaMode = "RM" | "RC";

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

/** What a port hands over: its context (the parent of everything else) and queues. */
export interface UrmaPortParts {
  readonly lib: UrmaLib;
  readonly ctx: UrmaContext;
  readonly jfce: Jfce;
  readonly jfc: Jfc;
  readonly jetty: Jetty;
  readonly mode: UrmaMode;
  /** The token of the jetty (and of the region segment registered for it). */
  readonly token: number;
}

/** A random u32 other than 0. */
export function randomToken(): number {
  const token = crypto.getRandomValues(new Uint32Array(1))[0];
  return token === 0 ? 1 : token;
}

/** The URMA mode number of a mode name. */
export function transModeOf(mode: UrmaMode): number {
  return mode === "RC" ? URMA_TM.RC : URMA_TM.RM;
}

/** The context and queues of one side, until handed over or closed. */
export class UrmaPort {
  #parts: UrmaPortParts | null;

  private constructor(parts: UrmaPortParts) {
    this.#parts = parts;
  }

  /** Opens the device and creates the queues (refused when the device's limits are too small). */
  static open(lib: UrmaLib, options: UrmaPortOptions): UrmaPort {
    const ctx = UrmaContext.open(lib, options.device, options.eidIndex ?? 0);
    try {
      const cap = ctx.query();
      const need = (have: number, want: number, what: string) => {
        if (have < want) {
          throw new VerbusError(
            "NO_DEVICE",
            `${ctx.deviceName}: ${what} is ${have}, verbus needs ${want}`,
          );
        }
      };
      need(cap.maxJfcDepth, JFC_DEPTH, "max_jfc_depth");
      need(cap.maxJfsDepth, SQ_DEPTH, "max_jfs_depth");
      need(cap.maxJfrDepth, RECV_DEPTH, "max_jfr_depth");
      need(cap.maxSge, SGE_PER_WR, "max_jfs_sge");
      const token = randomToken();
      const transMode = transModeOf(options.mode);
      const jfce = ctx.createJfce();
      const jfc = ctx.createJfc(JFC_DEPTH, jfce);
      const jfr = ctx.createJfr(jfc, { depth: RECV_DEPTH, token, transMode });
      const jetty = ctx.createJetty(jfc, jfr, { depth: SQ_DEPTH, maxSge: SGE_PER_WR, transMode });
      return new UrmaPort({ lib, ctx, jfce, jfc, jetty, mode: options.mode, token });
    } catch (e) {
      ctx.close();
      throw e;
    }
  }

  /** The jetty's mode. */
  get mode(): UrmaMode {
    return this.#open().mode;
  }

  /** The jetty's (and region segment's) token. */
  get token(): number {
    return this.#open().token;
  }

  /** This side's jetty as the peer imports it. */
  get address(): JettyAddress {
    const address = this.#open().jetty.address;
    return { eid: toHex(address.eid), uasid: address.uasid, id: address.id };
  }

  #open(): UrmaPortParts {
    if (this.#parts === null) throw new Error("the URMA port was handed over or closed");
    return this.#parts;
  }

  /** Hands the context and queues over (once); from then on the receiver closes them. */
  handOver(): UrmaPortParts {
    const parts = this.#open();
    this.#parts = null;
    return parts;
  }

  /** Releases everything (unless handed over). Safe twice. */
  close(): void {
    const parts = this.#parts;
    this.#parts = null;
    parts?.ctx.close();
  }
}
