/**
 * Completion channels and completion queues. Polling goes through the helper
 * (`vb_poll_cq`, batched into a caller-owned `vb_wc` array); event mode waits on the channel
 * through a nonblocking call (Deno) / Worker (Bun) so the event loop never blocks.
 * @module
 */
import { NativeError } from "../../errors.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import { IBV_COMP_CHANNEL } from "../../ffi/layouts/verbs.ts";
import { VB_WC } from "../../ffi/layouts/helper.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { Context } from "./context.ts";
import { checkRc } from "./verbs_lib.ts";

/** A completion channel (`struct ibv_comp_channel`). */
export class CompletionChannel extends NativeHandle {
  /** Its file descriptor (readable when a CQ event is pending). */
  readonly fd: number;

  /** @internal use Context.createCompChannel(). */
  constructor(readonly context: Context, ptr: NonNullPtr) {
    const lib = context.lib;
    super(`ibv_comp_channel on ${context.deviceName}`, ptr, context, (p) => {
      checkRc(
        lib,
        lib.verbs.symbols.ibv_destroy_comp_channel(p),
        "ibv_destroy_comp_channel",
        context.deviceName,
      );
    });
    this.fd = lib.ffi.readI32(ptr, IBV_COMP_CHANNEL.fd);
  }

  /**
   * Waits up to `timeoutMs` for one CQ event without blocking the event loop; the event is
   * acked. Resolves true on an event, false on timeout. Re-arm the CQ before waiting again.
   */
  async waitEvent(timeoutMs: number): Promise<boolean> {
    const lib = this.context.lib;
    const out = new BigUint64Array(1);
    const rc = await lib.helper.lib.nonblocking.vb_get_cq_event(this.handle, timeoutMs, out);
    if (rc < 0) throw new NativeError("ibv_get_cq_event", -rc, `wait on ${this.kind}`);
    return rc === 1;
  }

  /**
   * Like {@link waitEvent}, and also returns (true) when the eventfd `wakeFd` is signalled — a
   * wait that local work can end early (see {@link signalWake}).
   */
  async waitEventOrWake(wakeFd: number, timeoutMs: number): Promise<boolean> {
    const lib = this.context.lib;
    const out = new BigUint64Array(1);
    const rc = await lib.helper.lib.nonblocking.vb_get_cq_event_or_wake(
      this.handle,
      wakeFd,
      timeoutMs,
      out,
    );
    if (rc < 0) throw new NativeError("ibv_get_cq_event", -rc, `wait on ${this.kind}`);
    return rc === 1 || rc === 2;
  }
}

/** A completion queue (`struct ibv_cq`). */
export class CompletionQueue extends NativeHandle {
  /** @internal use Context.createCq(). */
  constructor(
    readonly context: Context,
    ptr: NonNullPtr,
    readonly channel: CompletionChannel | null,
  ) {
    const lib = context.lib;
    super(`ibv_cq on ${context.deviceName}`, ptr, channel ? [context, channel] : context, (p) => {
      checkRc(lib, lib.verbs.symbols.ibv_destroy_cq(p), "ibv_destroy_cq", context.deviceName);
    });
  }

  /**
   * Polls up to `max` completions into `out` (a caller-owned buffer of `max × 40` bytes laid out
   * as `vb_wc`, see ffi/layouts/helper.ts). Returns the count. Data path: allocates nothing.
   */
  poll(out: Uint8Array, max: number): number {
    const n = this.context.lib.helper.lib.symbols.vb_poll_cq(this.handle, max, out);
    if (n < 0) throw new NativeError("ibv_poll_cq", -n, this.kind);
    return n;
  }

  /** Requests a completion event on the channel (`ibv_req_notify_cq`). */
  reqNotify(solicitedOnly = false): void {
    const rc = this.context.lib.helper.lib.symbols.vb_req_notify_cq(
      this.handle,
      solicitedOnly ? 1 : 0,
    );
    if (rc !== 0) throw new NativeError("ibv_req_notify_cq", rc, this.kind);
  }
}

/** Bytes of one completion record in a poll buffer. */
export const WC_SIZE = VB_WC.$size;

/** `ibv_wc_status_str(status)`, e.g. "remote access error". */
export function wcStatusStr(lib: Context["lib"], status: number): string {
  const p = lib.verbs.symbols.ibv_wc_status_str(status);
  return p === null ? `status ${status}` : lib.ffi.cstring(p);
}
