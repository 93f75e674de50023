/**
 * The response record the agent writes into a producer's ring slot and the producer decodes
 * (layout in `record.ts`). A malformed one becomes a PROTOCOL error for the call it answers.
 *
 * Threading: any; the encoders write into the caller's area and keep the bytes of the last fabric
 * name (allocating only when it changes); the decoder keeps the last fabric name it decoded.
 * @module
 */
import { VerbusError, type VerbusErrorCode } from "../../errors.ts";
import { RpcError } from "../errors.ts";
import type { CallPath } from "../client/selector.ts";
import { copyOut } from "../session/copy_out.ts";
import {
  copyBytes,
  get16,
  get32,
  LastBytes,
  LastText,
  NO_BYTES,
  PATHS,
  RESPONSE_HEADER,
  set16,
  set32,
  utf8,
} from "./record.ts";

const lossy = new TextDecoder();
const loose = (b: Uint8Array) => lossy.decode(b);
const lastFabric = new LastText();
const putFabric = new LastBytes();

/** Bytes the response record of `r` takes at most (the fabric name counted as UTF-8 bound). */
export function responseBytes(
  r: { response: Uint8Array; attachment?: Uint8Array; fabric: string },
): number {
  return RESPONSE_HEADER + r.fabric.length * 3 + r.response.length + (r.attachment?.length ?? 0);
}

/** A successful answer, or −1 when it does not fit `area`. Allocates nothing while the fabric repeats. */
export function encodeResponse(
  area: Uint8Array,
  r: { response: Uint8Array; attachment?: Uint8Array; path: CallPath; fabric: string },
): number {
  const att = r.attachment?.length ?? 0;
  if (responseBytes(r) > area.length) return -1;
  let at = RESPONSE_HEADER;
  const f = putFabric.put(r.fabric, area, at);
  if (f < 0) return -1;
  at += f;
  area.set(r.response, at);
  at += r.response.length;
  if (att > 0) area.set(r.attachment!, at);
  at += att;
  area[0] = 0;
  area[1] = PATHS.indexOf(r.path);
  set16(area, 2, f);
  set32(area, 4, r.response.length);
  set32(area, 8, att);
  set32(area, 12, 0);
  set32(area, 16, 0);
  set32(area, 20, 0);
  return at;
}

/**
 * A successful answer whose response is `src[off, off + len)` and attachment the `att` bytes
 * after it (a remote session's slot: copied once, straight into `area`), or −1 when it does not
 * fit `area`. Allocates nothing while the fabric repeats.
 */
export function encodeResponseFrom(
  area: Uint8Array,
  src: Uint8Array,
  off: number,
  len: number,
  att: number,
  path: CallPath,
  fabric: string,
): number {
  if (RESPONSE_HEADER + fabric.length * 3 + len + att > area.length) return -1;
  let at = RESPONSE_HEADER;
  const f = putFabric.put(fabric, area, at);
  if (f < 0) return -1;
  at += f;
  copyBytes(area, at, src, off, len + att);
  at += len + att;
  area[0] = 0;
  area[1] = PATHS.indexOf(path);
  set16(area, 2, f);
  set32(area, 4, len);
  set32(area, 8, att);
  set32(area, 12, 0);
  set32(area, 16, 0);
  set32(area, 20, 0);
  return at;
}

/** An error answer (RpcError keeps its brpc code); texts are cut to fit. */
export function encodeError(area: Uint8Array, e: unknown): number {
  const rpc = e instanceof RpcError;
  const code = rpc ? "RPC_ERROR" : e instanceof VerbusError ? e.code : "FABRIC";
  const text = rpc ? e.errorText : e instanceof Error ? e.message : String(e);
  const v = new DataView(area.buffer, area.byteOffset, RESPONSE_HEADER);
  let at = RESPONSE_HEADER;
  const c = utf8.encodeInto(code, area.subarray(at, at + 32)).written;
  at += c;
  const t = utf8.encodeInto(text, area.subarray(at, Math.min(area.length, at + 4096))).written;
  at += t;
  v.setUint8(0, rpc ? 1 : 2);
  v.setUint8(1, 0);
  v.setUint16(2, 0, true);
  v.setUint32(4, 0, true);
  v.setUint32(8, 0, true);
  v.setInt32(12, rpc ? e.errorCode : 0, true);
  v.setUint16(16, c, true);
  v.setUint16(18, t, true);
  v.setUint32(20, 0, true);
  return at;
}

/** A decoded answer: the call's result (bytes copied out of the slot) or its error. */
export type AgentAnswer =
  | { ok: true; response: Uint8Array; attachment: Uint8Array; path: CallPath; fabric: string }
  | { ok: false; error: VerbusError };

/**
 * Decodes the response record in the first `length` bytes of `rec` (default: all of it), copying
 * its bytes out (`copyOut`: small ones from a pooled chunk on Deno); a malformed one becomes a
 * PROTOCOL error.
 */
export function decodeResponse(rec: Uint8Array, length: number = rec.length): AgentAnswer {
  const r = decodeAgentResult(rec, length);
  if (r instanceof VerbusError) return { ok: false, error: r };
  return {
    ok: true,
    response: r.response,
    attachment: r.attachment,
    path: r.path,
    fabric: r.fabric,
  };
}

/** What a producer's call through the agent resolves with. */
export interface AgentResult {
  response: Uint8Array;
  attachment: Uint8Array;
  path: CallPath;
  fabric: string;
  via: "agent";
}

/**
 * {@link decodeResponse} building the caller's result itself (no intermediate record, no closure;
 * an empty attachment is the shared empty array): the result, or the error the call fails with.
 */
export function decodeAgentResult(rec: Uint8Array, length: number): AgentResult | VerbusError {
  if (length === 0) return badResponse("is empty: the agent rejected the request record");
  if (length < RESPONSE_HEADER || length > rec.length) return badResponse(`of ${length} bytes`);
  const status = rec[0], path = rec[1], f = get16(rec, 2);
  const r = get32(rec, 4), a = get32(rec, 8);
  const c = get16(rec, 16), t = get16(rec, 18);
  if (RESPONSE_HEADER + f + r + a + c + t !== length || path >= PATHS.length || status > 2) {
    return badResponse("has inconsistent lengths");
  }
  let at = RESPONSE_HEADER;
  const fabric = lastFabric.get(rec, at, f, loose);
  at += f;
  if (status === 0) {
    return {
      response: copyOut(rec, at, r),
      attachment: a === 0 ? NO_BYTES : copyOut(rec, at + r, a),
      path: PATHS[path],
      fabric,
      via: "agent",
    };
  }
  at += r + a;
  const code = lossy.decode(rec.subarray(at, at + c));
  const message = lossy.decode(rec.subarray(at + c, at + c + t));
  if (status === 1) return new RpcError(get32(rec, 12) | 0, message);
  const known = /^[A-Z_]{1,32}$/.test(code) ? code as VerbusErrorCode : "FABRIC";
  return new VerbusError(known, `agent: ${message}`);
}

function badResponse(why: string): VerbusError {
  return new VerbusError("PROTOCOL", `agent response ${why}`);
}
