/**
 * The 64-bit FNV-1a hash both ends of an image upload roll over the file (`image_upload.ts`).
 *
 * Threading: any; an instance belongs to one caller.
 * @module
 */

/**
 * Rolling 64-bit FNV-1a. The state is kept as two unsigned 32-bit halves so the hot loop stays in
 * small-integer arithmetic (no bigint per byte): multiplying by the prime 2^40 + 0x1b3 is
 * `h * 0x1b3 + (h << 40)`.
 */
export class Fnv1a64 {
  /** High 32 bits of the current state. */
  hi = 0xcbf29ce4;
  /** Low 32 bits of the current state. */
  lo = 0x84222325;

  /** Folds `bytes[start, end)` into the state (reads `bytes` only). Returns `this`. */
  update(bytes: Uint8Array, start = 0, end = bytes.length): this {
    let hi = this.hi | 0, lo = this.lo | 0;
    for (let i = start; i < end; i++) {
      lo ^= bytes[i];
      // lo * 0x1b3 in 16-bit halves (every product < 2^26): low 32 bits and the carry into hi.
      const x = (lo & 0xffff) * 0x1b3;
      const y = (lo >>> 16) * 0x1b3 + (x >>> 16);
      hi = (Math.imul(hi, 0x1b3) + (y >>> 16) + (lo << 8)) | 0;
      lo = (y << 16) | (x & 0xffff);
    }
    this.hi = hi >>> 0;
    this.lo = lo >>> 0;
    return this;
  }

  /** The current hash as an unsigned 64-bit bigint. */
  digest(): bigint {
    return (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  /** Back to the offset basis. Returns `this`. */
  reset(): this {
    this.hi = 0xcbf29ce4;
    this.lo = 0x84222325;
    return this;
  }
}

/** 64-bit FNV-1a of `bytes` (read only), as an unsigned bigint. */
export function fnv1a64(bytes: Uint8Array): bigint {
  return new Fnv1a64().update(bytes).digest();
}
