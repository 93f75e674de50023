/**
 * Copying a small message out of a fabric region into memory the caller owns, at the cost the
 * runtime makes cheapest. On Deno (V8) `Uint8Array.prototype.slice` costs several hundred ns for
 * 64 B — measured here, 3–8× a copy into a view of a pooled chunk — so small copies are
 * bump-allocated from an 8 KiB chunk (as Node's Buffer pool does) and a full chunk is left to the
 * views that use it; on Bun (JSC) `slice` is the cheapest and is used as is.
 *
 * Ownership: the result is the caller's; with the pool its `buffer` is a shared chunk (use
 * `byteOffset`/`byteLength`, as for any view) that holds other results too — of this thread's
 * own calls only. Threading: module state, one JS thread (each thread has its own pool).
 * @module
 */
import { RUNTIME } from "../../util/runtime.ts";

/** Messages up to this size come from the pool (larger ones are sliced). */
const POOLED_MAX = 512;
const CHUNK = 8192;

const pooled = RUNTIME === "deno";
let chunk = new Uint8Array(CHUNK);
let used = 0;

/** A copy of `src[off, off + len)` the caller owns (see the module documentation). */
export function copyOut(src: Uint8Array, off: number, len: number): Uint8Array {
  if (!pooled || len > POOLED_MAX) return src.slice(off, off + len);
  if (used + len > CHUNK) {
    chunk = new Uint8Array(CHUNK);
    used = 0;
  }
  const out = chunk.subarray(used, used + len);
  used += (len + 7) & ~7; // 8-byte aligned starts: a caller's typed view over a result may need it
  out.set(src.subarray(off, off + len));
  return out;
}
