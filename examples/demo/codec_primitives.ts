/**
 * The checks and views every demo codec shares: a DataView over a byte view, UTF-8 with fatal
 * decoding, exact / minimum length checks and u64 range checks, each throwing a
 * {@link VerbusError} that names the field. Pure functions; any thread; nothing is retained.
 * @module
 */
import { VerbusError } from "../../errors.ts";

/** UTF-8 encoder shared by the demo codecs. */
export const utf8Encoder = new TextEncoder();
/** UTF-8 decoder that throws on invalid input (no BOM stripping). */
export const utf8StrictDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const U64_MAX = 0xffffffffffffffffn;

/** A DataView over exactly the bytes of `b` (no copy; valid while `b` is). */
export function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** `k` as bytes: strings are encoded as UTF-8 (a fresh buffer), bytes are returned as they are. */
export function asBytes(k: string | Uint8Array): Uint8Array {
  return typeof k === "string" ? utf8Encoder.encode(k) : k;
}

/**
 * Requires `bytes` to be exactly (`exact`, else PROTOCOL) or at least (else BOUNDS) `want` bytes
 * long; the message starts with `what`.
 */
export function needLength(what: string, bytes: Uint8Array, want: number, exact: boolean): void {
  if (exact ? bytes.length !== want : bytes.length < want) {
    throw new VerbusError(
      exact ? "PROTOCOL" : "BOUNDS",
      `${what}: ${bytes.length} bytes, expected ${exact ? "" : "at least "}${want}`,
    );
  }
}

/** Returns `v` when it fits a u64, else throws BOUNDS naming `what`. */
export function u64(what: string, v: bigint): bigint {
  if (v < 0n || v > U64_MAX) throw new VerbusError("BOUNDS", `${what} ${v} is not a u64`);
  return v;
}
