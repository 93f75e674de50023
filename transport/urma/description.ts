/**
 * Segment and jetty descriptions as the handshake carries them: the library's own blob
 * (`urma_get_seg_ctx` / `urma_get_rjetty`: the struct plus whatever extension the library
 * appends "for proxy transmission") where the library has one, else the fixed form (the 48-byte
 * `urma_seg_t` prefix every named ABI shares; for a jetty, no body: its eid/uasid/id travel in
 * the hello). Length-prefixed, bounds-checked on both ends:
 * ```
 *  0 version u8 (1) | 1 kind u8 (1 segment, 2 jetty) | 2 form u8 (0 fixed, 1 library)
 *  3 n u8: length of the sender's ABI name (≤ 32) | 4 L u16 LE: body length
 *  6 ABI name (n ASCII bytes) | 6+n body (L bytes); total = 6 + n + L ≤ {@link DESCRIPTION_MAX}
 * ```
 * A library blob is used only by a peer on the same named ABI, and only after its length
 * agrees with the ABI's rule (ffi/layouts/urma_abi.ts {@link BlobRule}: a blob that announces
 * more extension bytes than it carries is refused — the library would read past it); anyone
 * else imports the fixed form. Control path.
 * @module
 */
import { VerbusError } from "../../errors.ts";
import type { BlobRule, UrmaAbiLayouts } from "../../ffi/layouts/urma_abi.ts";
import { URMA_SEG_WIRE_BYTES } from "../../ffi/layouts/urma_abi.ts";
import { URMA_SEG } from "../../ffi/layouts/urma.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { Jetty } from "./jetty.ts";
import type { Segment } from "./segment.ts";
import type { UrmaLib } from "./urma_lib.ts";

/** Largest description (header + name + body): it must fit the handshake's 256-byte receive. */
export const DESCRIPTION_MAX = 240;
const HEADER = 6;
const NAME_MAX = 32;

/** A decoded description. */
export interface Description {
  kind: "segment" | "jetty";
  form: "fixed" | "library";
  /** The sender's named ABI. */
  abi: string;
  /** The fixed 48-byte segment, the library blob, or (fixed jetty) empty. */
  body: Uint8Array;
}

const KIND = { segment: 1, jetty: 2 } as const;

/** Encodes `d` (throws RangeError when it would not fit {@link DESCRIPTION_MAX}). */
export function encodeDescription(d: Description): Uint8Array {
  const name = new TextEncoder().encode(d.abi);
  const total = HEADER + name.length + d.body.length;
  if (name.length > NAME_MAX || total > DESCRIPTION_MAX) {
    throw new RangeError(`a ${d.kind} description of ${total} bytes exceeds ${DESCRIPTION_MAX}`);
  }
  const out = new Uint8Array(total);
  out.set([1, KIND[d.kind], d.form === "library" ? 1 : 0, name.length]);
  new DataView(out.buffer).setUint16(4, d.body.length, true);
  out.set(name, HEADER);
  out.set(d.body, HEADER + name.length);
  return out;
}

/** Decodes a peer's description of `kind`; throws HANDSHAKE naming what is wrong. */
export function decodeDescription(
  bytes: Uint8Array,
  kind: Description["kind"],
  who: string,
): Description {
  const fail = (why: string) => new VerbusError("HANDSHAKE", `${who} ${kind} description ${why}`);
  if (bytes.length < HEADER || bytes.length > DESCRIPTION_MAX) {
    throw fail(`is ${bytes.length} bytes (${HEADER} – ${DESCRIPTION_MAX})`);
  }
  const d = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes[0] !== 1) throw fail(`has version ${bytes[0]}, expected 1`);
  if (bytes[1] !== KIND[kind]) throw fail(`is of kind ${bytes[1]}, expected ${KIND[kind]}`);
  if (bytes[2] > 1) throw fail(`has form ${bytes[2]} (0 fixed, 1 library)`);
  const n = bytes[3], len = d.getUint16(4, true);
  if (n > NAME_MAX) throw fail(`names an ABI of ${n} bytes (max ${NAME_MAX})`);
  if (HEADER + n + len !== bytes.length) {
    throw fail(`says ${HEADER + n + len} bytes (name ${n}, body ${len}) but is ${bytes.length}`);
  }
  const abi = new TextDecoder().decode(bytes.subarray(HEADER, HEADER + n));
  if (!/^[0-9A-Za-z.-]*$/.test(abi)) throw fail(`names the ABI ${JSON.stringify(abi)}`);
  const form = bytes[2] === 1 ? "library" : "fixed";
  const body = bytes.slice(HEADER + n);
  if (kind === "segment" && body.length < URMA_SEG_WIRE_BYTES) {
    throw fail(`body is ${body.length} bytes, a segment needs at least ${URMA_SEG_WIRE_BYTES}`);
  }
  if (form === "fixed" && body.length !== (kind === "segment" ? URMA_SEG_WIRE_BYTES : 0)) {
    throw fail(`has a fixed form of ${body.length} bytes`);
  }
  return { kind, form, abi, body };
}

/**
 * The peer's library blobs to import with (each null: use the fixed form), from its optional
 * segment and jetty descriptions; a segment blob must start with the fixed form it also sent.
 * Throws HANDSHAKE naming what is wrong.
 */
export function peerBlobs(
  abi: UrmaAbiLayouts,
  fixedSeg: Uint8Array,
  segDesc: Uint8Array | undefined,
  jettyDesc: Uint8Array | undefined,
  who: string,
): { seg: Uint8Array | null; jetty: Uint8Array | null } {
  let seg: Uint8Array | null = null, jetty: Uint8Array | null = null;
  if (segDesc) {
    const d = decodeDescription(segDesc, "segment", who);
    if (!sameSegment(d.body, fixedSeg)) {
      throw new VerbusError(
        "HANDSHAKE",
        `${who} segment description names another segment (ubva, len, token_id) than its fixed form`,
      );
    }
    seg = importableBlob(abi, d, who);
  }
  if (jettyDesc) jetty = importableBlob(abi, decodeDescription(jettyDesc, "jetty", who), who);
  return { seg, jetty };
}

/**
 * Whether two `urma_seg_t` forms name the same segment: ubva, len and token_id equal (`attr`
 * may differ: a blob sets has_user_info).
 */
export function sameSegment(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length < URMA_SEG_WIRE_BYTES || b.length < URMA_SEG_WIRE_BYTES) return false;
  for (let i = 0; i < URMA_SEG_WIRE_BYTES; i++) {
    if ((i < URMA_SEG.attr || i >= URMA_SEG.token_id) && a[i] !== b[i]) return false;
  }
  return true;
}

/** The length `rule` gives `blob` (what the library will read), or null when it cannot tell. */
export function blobLength(rule: BlobRule, blob: Uint8Array): number | null {
  if (blob.length < rule.base) return null;
  const d = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  const announced = rule.bit < 0 || ((d.getUint32(rule.flagAt, true) >>> rule.bit) & 1) === 1;
  if (!announced) return rule.base;
  if (rule.lenAt + 4 > blob.length) return null;
  return rule.base + rule.lenAdd + d.getUint32(rule.lenAt, true);
}

/**
 * The library blob of `d` when this side can import it (same ABI, the ABI has the API, its
 * length agrees with the rule), else null (import the fixed form). A blob of our own ABI whose
 * length disagrees is hostile: throws HANDSHAKE.
 */
export function importableBlob(
  abi: UrmaAbiLayouts,
  d: Description,
  who: string,
): Uint8Array | null {
  if (d.form !== "library" || d.abi !== abi.name || !abi.blob) return null;
  const rule = d.kind === "segment" ? abi.blob.seg : abi.blob.rjetty;
  const want = blobLength(rule, d.body);
  if (want !== d.body.length) {
    throw new VerbusError(
      "HANDSHAKE",
      `${who} ${d.kind} description: its ${d.body.length}-byte ${abi.name} blob announces ${
        want ?? "an unreadable"
      } bytes`,
    );
  }
  return d.body;
}

/**
 * Calls a urma_get_* of `fn(ptrOut, lenOut)` shape, copies the library-allocated blob and frees
 * it with `put`; null when the call fails or the blob is too long to carry.
 */
export function takeBlob(
  u: UrmaLib,
  fn: (ptrOut: BigUint64Array, lenOut: Uint32Array) => number,
  put: (p: NonNullPtr) => void,
): Uint8Array | null {
  const ptrOut = new BigUint64Array(1), lenOut = new Uint32Array(1);
  if (fn(ptrOut, lenOut) !== 0) return null;
  const p = u.ffi.fromAddress(ptrOut[0]);
  if (p === null) return null;
  try {
    const len = lenOut[0];
    if (len === 0 || len > DESCRIPTION_MAX) return null; // too long to carry: the fixed form
    return new Uint8Array(u.ffi.view(p, len)).slice();
  } finally {
    put(p);
  }
}

/** This side's segment description: the library blob where there is one, else the fixed form. */
export function describeSegment(seg: Segment): Uint8Array {
  const s = seg.context.lib.lib.symbols;
  const u = seg.context.lib;
  return describe(u, "segment", seg.handle, seg.descriptor, s.urma_get_seg_ctx, s.urma_put_seg_ctx);
}

/** This side's jetty description: the library's urma_get_rjetty blob, else the fixed (empty) form. */
export function describeJetty(jetty: Jetty): Uint8Array {
  const s = jetty.context.lib.lib.symbols;
  const u = jetty.context.lib, none = new Uint8Array(0);
  return describe(u, "jetty", jetty.handle, none, s.urma_get_rjetty, s.urma_put_rjetty);
}

/** The description of `object` through the library's `get` / `put` pair, else `fixed`. */
function describe(
  u: UrmaLib,
  kind: Description["kind"],
  object: NonNullPtr,
  fixed: Uint8Array,
  get: ((o: NonNullPtr, p: BigUint64Array, l: Uint32Array) => number) | undefined,
  put: ((p: NonNullPtr) => void) | undefined,
): Uint8Array {
  const abi = u.layouts;
  let body: Uint8Array | null = null;
  if (get && put && abi.blob) {
    body = takeBlob(u, (ptrOut, lenOut) => get(object, ptrOut, lenOut), put);
    const rule = kind === "segment" ? abi.blob.seg : abi.blob.rjetty;
    if (body && blobLength(rule, body) !== body.length) body = null; // not what we can check
  }
  return encodeDescription({
    kind,
    form: body ? "library" : "fixed",
    abi: abi.name,
    body: body ?? fixed,
  });
}
