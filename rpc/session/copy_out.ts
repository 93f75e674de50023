/**
 * Copying a small message out of a fabric region into memory the caller owns, at the cost the
 * runtime makes cheapest. On Deno (V8) `Uint8Array.prototype.slice` of a small message costs
 * several times a `set` from a `subarray` (which makes two typed arrays per copy), so small
 * copies are bump-allocated from an 8 KiB chunk (as Node's Buffer pool does; a full chunk is left
 * to the views that use it) and copied by 32-bit words in JavaScript when source and length allow
 * (cheaper still: one typed array made, the result); on Bun (JSC) `slice` is the cheapest and is
 * used as is. `bench/profile/one_thread.ts` measures the difference.
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
let chunkBuffer = chunk.buffer;
let chunkWords = new Int32Array(chunkBuffer);
let used = 0;

/**
 * 32-bit views of the last two sources copied from (a session's region is copied from call
 * after call; a process with a client and a server alternates between two): a miss makes one.
 */
let srcA: Uint8Array | null = null, wordsA: Int32Array | null = null;
let srcB: Uint8Array | null = null, wordsB: Int32Array | null = null;

/** A 32-bit view of `src` from its start, or null when `src` does not start on 4 bytes. */
function wordsOf(src: Uint8Array): Int32Array | null {
  if (src === srcA) return wordsA;
  if (src === srcB) return wordsB;
  srcB = srcA, wordsB = wordsA, srcA = src; // a miss evicts the older entry
  wordsA = (src.byteOffset & 3) === 0
    ? new Int32Array(src.buffer, src.byteOffset, src.byteLength >> 2)
    : null;
  return wordsA;
}

/** A copy of `src[off, off + len)` the caller owns (see the module documentation). */
export function copyOut(src: Uint8Array, off: number, len: number): Uint8Array {
  if (!pooled || len > POOLED_MAX) return src.slice(off, off + len);
  if (used + len > CHUNK) {
    chunk = new Uint8Array(CHUNK);
    chunkBuffer = chunk.buffer;
    chunkWords = new Int32Array(chunkBuffer);
    used = 0;
  }
  const at = used;
  used += (len + 7) & ~7; // 8-byte aligned starts: a caller's typed view over a result may need it
  const words = (off & 3) === 0 ? wordsOf(src) : null;
  if (words === null) {
    chunk.set(src.subarray(off, off + len), at);
    return chunk.subarray(at, at + len);
  }
  const n = len >> 2, d = at >> 2, s = off >> 2;
  for (let w = 0; w < n; w++) chunkWords[d + w] = words[s + w];
  for (let k = n << 2; k < len; k++) chunk[at + k] = src[off + k];
  return new Uint8Array(chunkBuffer, at, len); // (cheaper than subarray on V8: no species lookup)
}
