/**
 * The request metas a server session hands its dispatcher, built from what a request descriptor
 * and its metadata block say: a frozen `RpcRequestMeta` reused per (method, timeout) for plain
 * calls (no log id, no request_id: a client sends the same call after call), and one `RpcMeta`
 * per ring slot whose `correlationId` is the slot (the token the answer comes back with).
 *
 * Ownership and threading: one per server session, on the server's JS thread. A slot's record
 * belongs to the call it carries until that call is answered.
 * @module
 */
import type { Int64, RpcMeta, RpcRequestMeta } from "../../protocol/rpc_meta.ts";
import { type MetaBlock, metaBlockBound, readMetaBlock } from "../meta_block.ts";

/** See the module documentation. */
export class RequestMetas {
  /** Per method index: the last frozen plain request meta. */
  readonly #byMethod: (RpcRequestMeta | undefined)[] = [];
  /** Per ring slot, made on the slot's first request (an idle session keeps none). */
  readonly #bySlot: (RpcMeta | undefined)[];
  readonly #slotSize: number;
  readonly #slotLocalOffset: number;
  /** The largest metadata block a request may carry (as the client derives it). */
  readonly bound: number;

  /** For a server region of `slots` slots of `slotSize` bytes from `slotLocalOffset`. */
  constructor(slots: number, slotSize: number, slotLocalOffset: number) {
    this.#bySlot = new Array(slots);
    this.#slotSize = slotSize;
    this.#slotLocalOffset = slotLocalOffset;
    this.bound = metaBlockBound(slotSize);
  }

  /**
   * The metadata block of the request in slot `slot` (`metaBytes` long, 0 = none) of `local`:
   * the block, undefined for none, or why it is refused (longer than the bound, overlapping an
   * inline payload of `inlineBytes` — -1 for a BULK request —, or malformed).
   */
  block(
    local: Uint8Array,
    slot: number,
    metaBytes: number,
    inlineBytes: number,
  ): MetaBlock | string | undefined {
    if (metaBytes === 0) return undefined;
    if (inlineBytes >= 0 && inlineBytes + metaBytes > this.#slotSize) {
      return `its payload and metadata block (${inlineBytes} + ${metaBytes} bytes) overlap`;
    }
    const slotEnd = this.#slotLocalOffset + (slot + 1) * this.#slotSize;
    return readMetaBlock(local, slotEnd, metaBytes, this.bound);
  }

  /** The meta of the request in slot `slot` (the slot's record, refilled). */
  meta(
    slot: number,
    method: number,
    service: string,
    name: string,
    timeout: number,
    logLo: number,
    logHi: number,
    block: MetaBlock | undefined,
  ): RpcMeta {
    const plain = !(logLo | logHi) && block?.requestId === undefined;
    let request = plain ? this.#byMethod[method] : undefined;
    if (request === undefined || request.timeoutMs !== (timeout || undefined)) {
      request = Object.freeze({
        serviceName: service,
        methodName: name,
        timeoutMs: timeout || undefined,
        logId: logLo | logHi ? int64Of(logHi, logLo) : undefined,
        requestId: block?.requestId,
      });
      if (plain) this.#byMethod[method] = request;
    }
    const meta = this.#bySlot[slot] ??= { request, correlationId: slot };
    meta.request = request;
    meta.userFields = block?.userFields;
    return meta;
  }
}

/**
 * The int64 `log_id` of the descriptor's two u32 words, as the RpcMeta decoder gives it on TCP:
 * a number when it is a safe integer, else a bigint (2^64-1 reads as -1, as on TCP).
 */
function int64Of(hi: number, lo: number): Int64 {
  if (hi < 0x200000) return hi * 0x1_0000_0000 + lo;
  if (hi >= 0xffe00001) return (hi - 0x1_0000_0000) * 0x1_0000_0000 + lo;
  return BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
}
