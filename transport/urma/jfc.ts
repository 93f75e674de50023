/**
 * Completion: JFCE (`urma_jfce_t`, its fd at offset 8 is pollable) and JFC (`urma_jfc_t`).
 * Event mode never blocks the event loop: the fd is waited on by the helper's `vb_wait_fd`
 * through a nonblocking call (Deno) / Worker (Bun), then `urma_wait_jfc` collects the events
 * without blocking and `urma_ack_jfc` acknowledges them. Polling goes into a preallocated
 * {@link CrReader} (data_path.ts). Polling allocates nothing; the JS thread of the context.
 * @module
 */
import { NativeError } from "../../errors.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import { URMA_JFC_CFG, URMA_JFCE_LEAD } from "../../ffi/layouts/urma.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { UrmaContext } from "./context.ts";
import type { CrReader } from "./data_path.ts";
import { UrmaStatusError } from "./errors.ts";
import { checkPtr, checkStatus } from "./urma_lib.ts";

/** Most JFCs one wait collects. */
const MAX_EVENTS = 16;

/** A completion event channel. */
export class Jfce extends NativeHandle {
  /** Its file descriptor: readable when an armed JFC got a completion. */
  readonly fd: number;
  #events = new BigUint64Array(MAX_EVENTS);
  #counts = new Uint32Array(MAX_EVENTS).fill(1);

  /** @internal use UrmaContext.createJfce(). */
  constructor(readonly context: UrmaContext, ptr: NonNullPtr) {
    const lib = context.lib;
    super(`urma_jfce on ${context.deviceName}`, ptr, context, (p) => {
      checkStatus(lib, lib.lib.symbols.urma_delete_jfce(p), "urma_delete_jfce", context.deviceName);
    });
    this.fd = lib.ffi.readI32(ptr, URMA_JFCE_LEAD.fd as number);
  }

  /**
   * Waits up to `timeoutMs` (-1: forever) for completion events without blocking the event
   * loop, then collects and acknowledges them. Resolves with the number of JFC events (0 on
   * timeout). Re-arm each JFC (`rearm()`) and poll it again before waiting anew.
   */
  async wait(timeoutMs: number): Promise<number> {
    const lib = this.context.lib;
    const rc = await lib.helper.lib.nonblocking.vb_wait_fd(this.fd, timeoutMs);
    if (rc < 0) throw new NativeError("poll", -rc, `wait on ${this.kind}`);
    if (rc === 0 || this.closed) return 0;
    const n = lib.lib.symbols.urma_wait_jfc(this.handle, MAX_EVENTS, 0, this.#events);
    if (n < 0) throw new UrmaStatusError("urma_wait_jfc", 0, this.kind, lib.lastError());
    if (n > 0) lib.lib.symbols.urma_ack_jfc(this.#events, this.#counts, n);
    return n;
  }
}

/** A completion queue. */
export class Jfc extends NativeHandle {
  /** @internal use UrmaContext.createJfc(). */
  constructor(
    readonly context: UrmaContext,
    ptr: NonNullPtr,
    readonly jfce: Jfce | null,
    readonly depth: number,
  ) {
    const lib = context.lib;
    super(
      `urma_jfc(${depth}) on ${context.deviceName}`,
      ptr,
      jfce ? [context, jfce] : context,
      (p) => {
        checkStatus(lib, lib.lib.symbols.urma_delete_jfc(p), "urma_delete_jfc", context.deviceName);
      },
    );
  }

  /** @internal */
  static create(ctx: UrmaContext, depth: number, jfce: Jfce | null): Jfc {
    const cfg = new Uint8Array(URMA_JFC_CFG.$size);
    const d = new DataView(cfg.buffer);
    d.setUint32(URMA_JFC_CFG.depth, depth, true);
    d.setBigUint64(URMA_JFC_CFG.jfce, jfce ? ctx.lib.ffi.address(jfce.handle) : 0n, true);
    const p = checkPtr(
      ctx.lib,
      ctx.lib.lib.symbols.urma_create_jfc(ctx.handle, cfg),
      "urma_create_jfc",
      `depth ${depth}`,
    );
    return new Jfc(ctx, p, jfce, depth);
  }

  /** Polls up to `reader.max` completions into the reader's buffer; returns the count. Allocates nothing. */
  poll(reader: CrReader): number {
    const n = this.context.lib.lib.symbols.urma_poll_jfc(this.handle, reader.max, reader.buffer);
    if (n < 0) {
      throw new UrmaStatusError("urma_poll_jfc", 0, this.kind, this.context.lib.lastError());
    }
    return n;
  }

  /** Arms the JFC: its JFCE fd becomes readable at the next completion (`urma_rearm_jfc`). */
  rearm(solicitedOnly = false): void {
    const lib = this.context.lib;
    checkStatus(
      lib,
      lib.lib.symbols.urma_rearm_jfc(this.handle, solicitedOnly),
      "urma_rearm_jfc",
      this.kind,
    );
  }
}
