/**
 * Queues: JFR (receive queue, guarded by a token), JFS (send queue for the one-call
 * `urma_write` / `urma_read` / `urma_send`), Jetty (a JFS + a shared JFR; RM by default, RC once
 * bound) and TargetJetty (a peer's jetty, imported — after its segments — to address requests).
 * Control path, except `Jfs.write` / `Jfs.read` (one call each, no allocation); every object
 * belongs to the JS thread of its context and is closed with it.
 * @module
 */
import { NativeHandle } from "../../ffi/handle.ts";
import {
  URMA_JETTY_CFG,
  URMA_JETTY_ID,
  URMA_JETTY_LEAD,
  URMA_JFR_CFG,
  URMA_JFS_CFG,
} from "../../ffi/layouts/urma.ts";
import { URMA_TM } from "../../ffi/symbols/liburma.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { UrmaContext } from "./context.ts";
import type { Jfc } from "./jfc.ts";
import type { ImportedSegment, Segment } from "./segment.ts";
import { checkPtr, checkStatus, type UrmaLib } from "./urma_lib.ts";

/** Jetty transport mode: reliable message (one jetty talks to many) or reliable connection (bound). */
export type UrmaMode = "RM" | "RC";

/** A random u32 other than 0. */
export function randomToken(): number {
  const token = crypto.getRandomValues(new Uint32Array(1))[0];
  return token === 0 ? 1 : token;
}

/** The URMA mode number of a mode name. */
export function transModeOf(mode: UrmaMode): number {
  return mode === "RC" ? URMA_TM.RC : URMA_TM.RM;
}

/** A jetty's address, as the handshake carries it. */
export interface RemoteJetty {
  /** 16 raw EID bytes. */
  eid: Uint8Array;
  uasid: number;
  id: number;
  /** URMA_TM.RM (default) or URMA_TM.RC. */
  transMode: number;
}

/** Options of a JFR. */
export interface JfrOptions {
  /** Receive WRs it can hold. */
  depth: number;
  /** The token a peer must import this jetty with (u32). */
  token: number;
  /** SGEs per receive WR (default 1). */
  maxSge?: number;
  /** URMA_TM.RM (default) or URMA_TM.RC; must equal the jetty's. */
  transMode?: number;
}

/** Options of a send queue (JFS or jetty). */
export interface JfsOptions {
  /** Send WRs (default 128). */
  depth?: number;
  /** SGEs per WR (default 4). */
  maxSge?: number;
  /** Inline bytes (default 0). */
  maxInline?: number;
  /** URMA_TM.RM (default) or URMA_TM.RC. */
  transMode?: number;
}

/** Options of a jetty. */
export type JettyOptions = JfsOptions;

function fillJfsCfg(d: DataView, at: number, jfc: Jfc, o: JfsOptions, u: UrmaLib): void {
  d.setUint32(at + URMA_JFS_CFG.depth, o.depth ?? 128, true);
  d.setUint32(at + URMA_JFS_CFG.trans_mode, o.transMode ?? URMA_TM.RM, true);
  d.setUint8(at + URMA_JFS_CFG.max_sge, o.maxSge ?? 4);
  d.setUint8(at + URMA_JFS_CFG.max_rsge, 1);
  d.setUint32(at + URMA_JFS_CFG.max_inline_data, o.maxInline ?? 0, true);
  d.setUint8(at + URMA_JFS_CFG.rnr_retry, 7);
  d.setUint8(at + URMA_JFS_CFG.err_timeout, 17);
  d.setBigUint64(at + URMA_JFS_CFG.jfc, u.ffi.address(jfc.handle), true);
}

/** Reads a urma_jetty_id_t at `p + at`. */
function readJettyId(u: UrmaLib, p: NonNullPtr, at: number, transMode: number): RemoteJetty {
  const raw = new Uint8Array(u.ffi.view(p, at + URMA_JETTY_ID.$size));
  return {
    eid: raw.slice(at, at + 16),
    uasid: u.ffi.readU32(p, at + URMA_JETTY_ID.uasid),
    id: u.ffi.readU32(p, at + URMA_JETTY_ID.id),
    transMode,
  };
}

/** A receive queue. */
export class Jfr extends NativeHandle {
  /** @internal use UrmaContext.createJfr(). */
  constructor(
    readonly context: UrmaContext,
    ptr: NonNullPtr,
    readonly jfc: Jfc,
    readonly transMode: number,
  ) {
    const lib = context.lib;
    super(`urma_jfr on ${context.deviceName}`, ptr, [context, jfc], (p) => {
      checkStatus(lib, lib.lib.symbols.urma_delete_jfr(p), "urma_delete_jfr", context.deviceName);
    });
  }

  /** @internal */
  static create(ctx: UrmaContext, jfc: Jfc, o: JfrOptions): Jfr {
    const cfg = new Uint8Array(URMA_JFR_CFG.$size);
    const d = new DataView(cfg.buffer);
    const mode = o.transMode ?? URMA_TM.RM;
    d.setUint32(URMA_JFR_CFG.depth, o.depth, true);
    d.setUint32(URMA_JFR_CFG.trans_mode, mode, true);
    d.setUint8(URMA_JFR_CFG.max_sge, o.maxSge ?? 1);
    d.setUint8(URMA_JFR_CFG.min_rnr_timer, 12);
    d.setBigUint64(URMA_JFR_CFG.jfc, ctx.lib.ffi.address(jfc.handle), true);
    d.setUint32(URMA_JFR_CFG.token_value, o.token >>> 0, true);
    const p = checkPtr(
      ctx.lib,
      ctx.lib.lib.symbols.urma_create_jfr(ctx.handle, cfg),
      "urma_create_jfr",
      `depth ${o.depth}`,
    );
    return new Jfr(ctx, p, jfc, mode);
  }
}

/** A send queue for the one-call data-path functions. */
export class Jfs extends NativeHandle {
  /** @internal use UrmaContext.createJfs(). */
  constructor(readonly context: UrmaContext, ptr: NonNullPtr, readonly jfc: Jfc) {
    const lib = context.lib;
    super(`urma_jfs on ${context.deviceName}`, ptr, [context, jfc], (p) => {
      checkStatus(lib, lib.lib.symbols.urma_delete_jfs(p), "urma_delete_jfs", context.deviceName);
    });
  }

  /** @internal */
  static create(ctx: UrmaContext, jfc: Jfc, o: JfsOptions): Jfs {
    const cfg = new Uint8Array(URMA_JFS_CFG.$size);
    fillJfsCfg(new DataView(cfg.buffer), 0, jfc, o, ctx.lib);
    return new Jfs(
      ctx,
      checkPtr(
        ctx.lib,
        ctx.lib.lib.symbols.urma_create_jfs(ctx.handle, cfg),
        "urma_create_jfs",
        ctx.deviceName,
      ),
      jfc,
    );
  }

  /** `urma_write` of `len` bytes from `src` at `srcAddr` to `dst` at `dstAddr`. Returns the urma_status_t. */
  write(
    t: TargetJetty,
    dst: ImportedSegment,
    src: Segment,
    dstAddr: number,
    srcAddr: number,
    len: number,
    flags: number,
    userCtx: number,
  ): number {
    return this.context.lib.lib.symbols.urma_write(
      this.handle,
      t.handle,
      dst.handle,
      src.handle,
      dstAddr,
      srcAddr,
      len,
      flags,
      userCtx,
    );
  }

  /** `urma_read` of `len` bytes from `src` at `srcAddr` into `dst` at `dstAddr`. Returns the urma_status_t. */
  read(
    t: TargetJetty,
    dst: Segment,
    src: ImportedSegment,
    dstAddr: number,
    srcAddr: number,
    len: number,
    flags: number,
    userCtx: number,
  ): number {
    return this.context.lib.lib.symbols.urma_read(
      this.handle,
      t.handle,
      dst.handle,
      src.handle,
      dstAddr,
      srcAddr,
      len,
      flags,
      userCtx,
    );
  }
}

/** A jetty: send queue + shared receive queue. */
export class Jetty extends NativeHandle {
  /** Its address (eid, uasid, id, trans mode): what the peer imports. */
  readonly address: RemoteJetty;
  #bound: TargetJetty | null = null;

  /** @internal use UrmaContext.createJetty(). */
  constructor(
    readonly context: UrmaContext,
    ptr: NonNullPtr,
    readonly jfc: Jfc,
    readonly jfr: Jfr,
    transMode: number,
  ) {
    const lib = context.lib;
    super(`urma_jetty on ${context.deviceName}`, ptr, [context, jfc, jfr], (p) => {
      checkStatus(
        lib,
        lib.lib.symbols.urma_delete_jetty(p),
        "urma_delete_jetty",
        context.deviceName,
      );
    });
    this.address = readJettyId(lib, ptr, URMA_JETTY_LEAD.jetty_id as number, transMode);
  }

  /** @internal */
  static create(ctx: UrmaContext, jfc: Jfc, jfr: Jfr, o: JettyOptions): Jetty {
    const cfg = new Uint8Array(URMA_JETTY_CFG.$size);
    const d = new DataView(cfg.buffer);
    const mode = o.transMode ?? jfr.transMode;
    d.setUint32(URMA_JETTY_CFG.flag, 1, true); // share_jfr
    fillJfsCfg(d, URMA_JETTY_CFG.jfs_cfg, jfc, { ...o, transMode: mode }, ctx.lib);
    d.setBigUint64(URMA_JETTY_CFG["shared.jfr"], ctx.lib.ffi.address(jfr.handle), true);
    const p = checkPtr(
      ctx.lib,
      ctx.lib.lib.symbols.urma_create_jetty(ctx.handle, cfg),
      "urma_create_jetty",
      ctx.deviceName,
    );
    return new Jetty(ctx, p, jfc, jfr, mode);
  }

  /** The target this RC jetty is bound to, if any. */
  get bound(): TargetJetty | null {
    return this.#bound;
  }

  /** `urma_bind_jetty` (RC only): from now on requests go to `t`. */
  bind(t: TargetJetty): void {
    const lib = this.context.lib;
    checkStatus(
      lib,
      lib.lib.symbols.urma_bind_jetty(this.handle, t.handle),
      "urma_bind_jetty",
      this.kind,
    );
    this.#bound = t;
    t.boundBy.add(this);
  }

  /** `urma_unbind_jetty`. Safe when not bound. */
  unbind(): void {
    const t = this.#bound;
    if (!t) return;
    this.#bound = null;
    t.boundBy.delete(this);
    const lib = this.context.lib;
    checkStatus(
      lib,
      lib.lib.symbols.urma_unbind_jetty(this.handle),
      "urma_unbind_jetty",
      this.kind,
    );
  }

  protected override beforeDestroy(): void {
    try {
      this.unbind();
    } catch { /* the delete reports the failure that matters */ }
  }
}

/** A peer's jetty, imported. */
export class TargetJetty extends NativeHandle {
  /** Local jetties bound to it (unbound before it is unimported). @internal */
  readonly boundBy = new Set<Jetty>();
  /** The native pointer as a number, for work requests built in typed arrays. @internal */
  readonly ptrValue: number;

  /** @internal use UrmaContext.importJetty(). */
  constructor(readonly context: UrmaContext, ptr: NonNullPtr, readonly remote: RemoteJetty) {
    const lib = context.lib;
    super(`urma_target_jetty ${remote.uasid}/${remote.id}`, ptr, context, (p) => {
      checkStatus(
        lib,
        lib.lib.symbols.urma_unimport_jetty(p),
        "urma_unimport_jetty",
        `jetty ${remote.id}`,
      );
    });
    this.ptrValue = Number(lib.ffi.address(ptr));
  }

  /** @internal */
  static import(
    ctx: UrmaContext,
    r: RemoteJetty,
    token: number,
    blob: Uint8Array | null = null,
  ): TargetJetty {
    const L = ctx.lib.layouts.rjetty; // this ABI's urma_rjetty_t (48, 56, 72 or 80 bytes)
    if (r.eid.length !== 16) throw new RangeError("eid must be 16 bytes");
    // The peer library's own blob (its length checked by description.ts), or built from fields.
    const rj = blob ? blob.slice() : new Uint8Array(L.$size);
    if (rj.length < L.$size) throw new RangeError(`a jetty blob is at least ${L.$size} bytes`);
    const d = new DataView(rj.buffer);
    const fields = [L.jetty_id + URMA_JETTY_ID.uasid, L.jetty_id + URMA_JETTY_ID.id, L.trans_mode];
    const want = [r.uasid >>> 0, r.id >>> 0, r.transMode];
    if (blob) {
      const same = fields.every((at, i) => d.getUint32(at, true) === want[i]) &&
        r.eid.every((b, i) => rj[L.jetty_id + i] === b);
      if (!same) throw new RangeError("the jetty blob names another jetty than the hello");
    } else {
      rj.set(r.eid, L.jetty_id);
      fields.forEach((at, i) => d.setUint32(at, want[i], true));
      d.setUint32(L.type, 1, true); // URMA_JETTY
    }
    const tok = new Uint32Array([token >>> 0]);
    const p = checkPtr(
      ctx.lib,
      ctx.lib.lib.symbols.urma_import_jetty(ctx.handle, rj, tok),
      "urma_import_jetty",
      `jetty ${r.uasid}/${r.id}`,
    );
    return new TargetJetty(ctx, p, { ...r, eid: r.eid.slice() });
  }

  protected override beforeDestroy(): void {
    for (const j of [...this.boundBy]) {
      try {
        j.unbind();
      } catch { /* reported by the unimport if it matters */ }
    }
  }
}
