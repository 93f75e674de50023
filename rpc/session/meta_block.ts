/**
 * The metadata block of a fabric call: what a call carries besides its bytes and the
 * descriptor's fixed fields — request `user_fields` (headers) and `request_id` one way; response
 * `user_fields`, trailers and error details the other. The block is an encoded brpc `RpcMeta`
 * holding only those fields (the same protobuf a TCP call carries them in, verbus's extensions
 * included; a request's `request_id` sits in a `request` with empty names), so one codec — the
 * bounds-checked RpcMeta decoder — reads it on both sides.
 *
 * Where: the last `meta` bytes of the call's own slot-local area (the request's in the server's
 * region, the answer's in the client's), its length in the descriptor (`REQ.meta`, `RESP.meta`;
 * 0 = none). The slot's payload (EAGER request, INLINE answer) plus the block must fit the slot;
 * BULK requests and LAZY answers leave the slot's area free for it. A block is at most
 * {@link metaBlockBound} bytes: a request past it goes over TCP (the client logs why, naming the
 * size), an answer past it becomes an ERESPONSE error naming the size. A block a peer wrote that
 * is longer than the bound or does not decode fails that call only, with an error saying so.
 *
 * Ownership and threading: one {@link MetaBlockEncoder} per session side, on its JS thread; the
 * decoded maps and details are fresh objects the receiver owns.
 * @module
 */
import type { ClientCallOptions } from "../client/client_options.ts";
import {
  copyEncodedMeta,
  decodeRpcMeta,
  encodeRpcMetaToScratch,
  type RpcMeta,
  type RpcRequestMeta,
} from "../protocol/rpc_meta.ts";

/** The largest metadata block a fabric call carries either way (smaller slots: half a slot). */
export const MAX_META_BLOCK_BYTES = 4096;

/** The metadata bound of a region whose slots are `slotSize` bytes. */
export function metaBlockBound(slotSize: number): number {
  return Math.min(MAX_META_BLOCK_BYTES, slotSize >>> 1);
}

/** Encodes blocks into one preallocated buffer of {@link MAX_META_BLOCK_BYTES}. */
export class MetaBlockEncoder {
  /** The last encoded block is `bytes.subarray(0, length)`. */
  readonly bytes = new Uint8Array(MAX_META_BLOCK_BYTES);
  /** Bytes of the last encoded block (0 = none). */
  length = 0;
  readonly #meta: RpcMeta = {};
  readonly #request: RpcRequestMeta = { serviceName: "", methodName: "", requestId: undefined };

  /**
   * Encodes the request block of `options` (`requestId`, `userFields`); returns its size, 0
   * when the call has neither, or the size it would have (negative) when it exceeds `bound`.
   */
  request(options: ClientCallOptions, bound: number): number {
    if (options.requestId === undefined && options.userFields === undefined) {
      return this.length = 0;
    }
    const m = this.#meta, r = this.#request;
    r.requestId = options.requestId;
    m.request = options.requestId === undefined ? undefined : r;
    m.userFields = options.userFields as Map<string, string> | undefined;
    const n = this.#encode(bound);
    m.request = m.userFields = undefined;
    return n;
  }

  /**
   * Encodes the answer block of a served call (response `user_fields`, trailers, and the error
   * details of an error answer); same returns as {@link request}.
   */
  answer(
    userFields: Map<string, string> | undefined,
    trailers: Map<string, string> | undefined,
    errorDetails: RpcMeta["errorDetails"],
    bound: number,
  ): number {
    if (userFields === undefined && trailers === undefined && errorDetails === undefined) {
      return this.length = 0;
    }
    const m = this.#meta;
    m.userFields = userFields;
    m.trailers = trailers;
    m.errorDetails = errorDetails;
    const n = this.#encode(bound);
    m.userFields = m.trailers = m.errorDetails = undefined;
    return n;
  }

  #encode(bound: number): number {
    const n = encodeRpcMetaToScratch(this.#meta);
    if (n > bound) {
      this.length = 0;
      return -n;
    }
    copyEncodedMeta(this.bytes, 0, n);
    return this.length = n;
  }

  /** The last encoded block. */
  view(): Uint8Array {
    return this.bytes.subarray(0, this.length);
  }
}

/** A decoded block: the fields the receiver uses (each absent when not sent). */
export interface MetaBlock {
  requestId?: string;
  userFields?: Map<string, string>;
  trailers?: Map<string, string>;
  errorDetails?: RpcMeta["errorDetails"];
}

/**
 * Decodes the `length`-byte block that ends at `slotEnd` in `memory` (a peer wrote it): the
 * block, or a sentence saying what is wrong with it (longer than `bound`, or not a valid
 * RpcMeta). Reads `memory` only inside `[slotEnd - length, slotEnd)`.
 */
export function readMetaBlock(
  memory: Uint8Array,
  slotEnd: number,
  length: number,
  bound: number,
): MetaBlock | string {
  if (length > bound) {
    return `its metadata block of ${length} bytes exceeds the fabric bound of ${bound} bytes`;
  }
  let m: RpcMeta;
  try {
    m = decodeRpcMeta(memory, slotEnd - length, slotEnd);
  } catch (e) {
    return `its metadata block of ${length} bytes is malformed (${
      e instanceof Error ? e.message : String(e)
    })`;
  }
  const b: MetaBlock = {};
  if (m.request?.requestId !== undefined) b.requestId = m.request.requestId;
  if (m.userFields !== undefined) b.userFields = m.userFields;
  if (m.trailers !== undefined) b.trailers = m.trailers;
  if (m.errorDetails !== undefined) b.errorDetails = m.errorDetails;
  return b;
}
