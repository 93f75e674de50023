/**
 * Segments: memory registered with a token (`urma_register_seg`) so a peer may access it, and a
 * peer's segment imported from the 48-byte fixed form of its `urma_seg_t` (`urma_import_seg`; the
 * form every named ABI shares: ffi/layouts/urma_abi.ts — padded with a zero extension where the
 * local ABI's `urma_seg_t` is longer). The handshake
 * carries the descriptor and the token; every access is checked against the token and bounds.
 * A registered segment keeps its buffer referenced until it is closed (the caller owns the
 * buffer's contents). Control path; the JS thread of the context.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import { bytesEqual, toHex } from "../../util/hex.ts";
import {
  URMA_REG_SEG_FLAG_BITS,
  URMA_SEG,
  URMA_SEG_CFG,
  URMA_UBVA,
} from "../../ffi/layouts/urma.ts";
import { URMA_SEG_WIRE_BYTES } from "../../ffi/layouts/urma_abi.ts";
import { URMA_ACCESS, URMA_TOKEN_POLICY } from "../../ffi/symbols/liburma.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { UrmaContext } from "./context.ts";
import { checkPtr, checkStatus } from "./urma_lib.ts";
import { sameSegment } from "./description.ts";

/** Options of a registration. */
export interface RegisterOptions {
  /** The token a peer must present (u32). */
  token: number;
  /** URMA_ACCESS bits granted to peers (default READ | WRITE). */
  access?: number;
  /** URMA_TOKEN_POLICY (default PLAIN_TEXT). */
  tokenPolicy?: number;
}

/** A registered local segment. The buffer stays referenced until close(). */
export class Segment extends NativeHandle {
  /** Start address (user-space addresses fit in 53 bits). */
  readonly address: number;
  /** Length in bytes. */
  readonly length: number;
  /** The token peers must import it with. */
  readonly token: number;
  /** The fixed 48-byte form of the `urma_seg_t` a peer imports (send it with the token). */
  readonly descriptor: Uint8Array;
  /** The native pointer as a number, for work requests built in typed arrays. @internal */
  readonly ptrValue: number;
  #buffer: Uint8Array | null;

  /** @internal use UrmaContext.registerSegment(). */
  constructor(readonly context: UrmaContext, ptr: NonNullPtr, buffer: Uint8Array, token: number) {
    const lib = context.lib;
    super(`urma_seg ${buffer.byteLength} B`, ptr, context, (p) => {
      checkStatus(
        lib,
        lib.lib.symbols.urma_unregister_seg(p),
        "urma_unregister_seg",
        `${buffer.byteLength} bytes`,
      );
    });
    this.#buffer = buffer;
    this.address = Number(lib.ffi.address(lib.ffi.ptrOf(buffer)));
    this.length = buffer.byteLength;
    this.token = token;
    this.ptrValue = Number(lib.ffi.address(ptr));
    const at = lib.layouts.targetSeg.seg;
    this.descriptor = new Uint8Array(lib.ffi.view(ptr, at + URMA_SEG_WIRE_BYTES)).slice(at);
  }

  /** @internal */
  static register(ctx: UrmaContext, buffer: Uint8Array, o: RegisterOptions): Segment {
    if (buffer.byteLength === 0) throw new RangeError("cannot register an empty buffer");
    const f = ctx.lib.ffi;
    const cfg = new Uint8Array(URMA_SEG_CFG.$size);
    const d = new DataView(cfg.buffer);
    const B = URMA_REG_SEG_FLAG_BITS;
    d.setBigUint64(URMA_SEG_CFG.va, f.address(f.ptrOf(buffer)), true);
    d.setBigUint64(URMA_SEG_CFG.len, BigInt(buffer.byteLength), true);
    d.setUint32(URMA_SEG_CFG.token_value, o.token >>> 0, true);
    const flag = ((o.tokenPolicy ?? URMA_TOKEN_POLICY.PLAIN_TEXT) << B.token_policy) |
      ((o.access ?? (URMA_ACCESS.READ | URMA_ACCESS.WRITE)) << B.access);
    d.setUint32(URMA_SEG_CFG.flag, flag >>> 0, true);
    const p = checkPtr(
      ctx.lib,
      ctx.lib.lib.symbols.urma_register_seg(ctx.handle, cfg),
      "urma_register_seg",
      `${buffer.byteLength} bytes`,
    );
    return new Segment(ctx, p, buffer, o.token >>> 0);
  }

  /** The registered buffer (owned by this segment while it is open). */
  get buffer(): Uint8Array {
    return this.#buffer ?? new Uint8Array(0);
  }

  protected override beforeDestroy(): void {
    // Released after urma_unregister_seg returns (the destroy closure still references it).
    this.#buffer = null;
  }
}

/** A peer's segment, imported. */
export class ImportedSegment extends NativeHandle {
  /** Remote start address. */
  readonly address: number;
  /** Length in bytes. */
  readonly length: number;
  /** The native pointer as a number, for work requests built in typed arrays. @internal */
  readonly ptrValue: number;
  /** The 48-byte `urma_seg_t` it was imported from (a copy). */
  readonly descriptorBytes: Uint8Array;
  /** The token it was imported with. */
  readonly token: number;
  /** The library's own description it was imported from (a copy), or null (the fixed form). */
  readonly blobBytes: Uint8Array | null;

  /** @internal use UrmaContext.importSegment(). */
  constructor(
    readonly context: UrmaContext,
    ptr: NonNullPtr,
    address: number,
    length: number,
    descriptor: Uint8Array,
    token: number,
    blob: Uint8Array | null,
  ) {
    const lib = context.lib;
    super(`urma_imported_seg ${length} B`, ptr, context, (p) => {
      checkStatus(
        lib,
        lib.lib.symbols.urma_unimport_seg(p),
        "urma_unimport_seg",
        `${length} bytes`,
      );
    });
    this.address = address;
    this.length = length;
    this.ptrValue = Number(lib.ffi.address(ptr));
    this.descriptorBytes = descriptor;
    this.token = token >>> 0;
    this.blobBytes = blob;
  }

  /** @internal */
  static import(
    ctx: UrmaContext,
    desc: Uint8Array,
    token: number,
    blob: Uint8Array | null = null,
  ): ImportedSegment {
    if (desc.byteLength !== URMA_SEG_WIRE_BYTES) {
      throw new RangeError(`a segment descriptor is ${URMA_SEG_WIRE_BYTES} bytes`);
    }
    if (blob && (blob.length < ctx.lib.layouts.seg.$size || !sameSegment(blob, desc))) {
      throw new RangeError("the segment blob names another segment than its fixed form");
    }
    // The library's own blob, or this ABI's urma_seg_t from the fixed form (ext zero: none).
    const seg = blob ? blob.slice() : new Uint8Array(ctx.lib.layouts.seg.$size);
    if (!blob) seg.set(desc);
    const d = new DataView(seg.buffer);
    const va = d.getBigUint64(URMA_SEG.ubva + URMA_UBVA.va, true);
    const len = d.getBigUint64(URMA_SEG.len, true);
    if (va > BigInt(Number.MAX_SAFE_INTEGER) || len > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new RangeError("segment address out of range");
    }
    const tok = new Uint32Array([token >>> 0]);
    const p = checkPtr(
      ctx.lib,
      ctx.lib.lib.symbols.urma_import_seg(ctx.handle, seg, tok, 0, 0),
      "urma_import_seg",
      `${len} bytes`,
    );
    return new ImportedSegment(ctx, p, Number(va), Number(len), desc.slice(), token, blob && seg);
  }
}

/**
 * Checks a peer's `urma_seg_t` before importing it: it must cover exactly `expectedLen` bytes
 * (its region plus the fabric page) at a user address and name the EID of the peer's jetty.
 */
export function checkSegment(
  descriptor: Uint8Array,
  expectedLen: number,
  eid: Uint8Array,
  who: string,
): void {
  const fail = (why: string) => new VerbusError("HANDSHAKE", `${who} segment ${why}`);
  if (descriptor.length !== URMA_SEG_WIRE_BYTES) {
    throw fail(`has ${descriptor.length} bytes, expected ${URMA_SEG_WIRE_BYTES}`);
  }
  const view = new DataView(descriptor.buffer, descriptor.byteOffset, descriptor.byteLength);
  const len = view.getBigUint64(URMA_SEG.len, true);
  const va = view.getBigUint64(URMA_SEG.ubva + URMA_UBVA.va, true);
  if (len !== BigInt(expectedLen)) {
    throw fail(`covers ${len} bytes, the negotiated region needs exactly ${expectedLen}`);
  }
  if (va === 0n || va + len > 1n << 53n) {
    throw fail(`address 0x${va.toString(16)} is not a user address`);
  }
  const eidAt = URMA_SEG.ubva + URMA_UBVA.eid;
  const segEid = descriptor.subarray(eidAt, eidAt + 16);
  if (!bytesEqual(segEid, eid)) {
    throw fail(`is on EID ${toHex(segEid)}, its jetty on ${toHex(eid)}`);
  }
}
