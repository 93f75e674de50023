/**
 * The byte format of one LAZY object in the server's object pool, shared by both sides: the
 * server's `ObjectPool` (object_pool.ts) writes it, the client checks what it read with {@link verifyObject}.
 *
 * ```text
 *  object offset
 *  │
 *  ▼ 0          4          8                       8+len      8+len+4
 *  ┌──────────┬──────────┬────────────────────────┬──────────┐
 *  │ gen u32LE│ len u32LE│ data (len bytes)        │ gen u32LE│
 *  └──────────┴──────────┴────────────────────────┴──────────┘
 * ```
 *
 * A generation is never 0 while the object is live; freeing an object zeroes both generation
 * words, so a late reader of a freed object fails {@link verifyObject}.
 *
 * Pure constants and functions: any thread, nothing allocated.
 * @module
 */
/** Bytes before an object's data: generation u32 LE, length u32 LE. */
export const OBJECT_HEADER_BYTES = 8;
/** Bytes after an object's data: generation u32 LE again. */
const OBJECT_TRAILER_BYTES = 4;
/** Header + trailer: an object of `len` data bytes spans `len + OBJECT_OVERHEAD_BYTES` bytes. */
export const OBJECT_OVERHEAD_BYTES = OBJECT_HEADER_BYTES + OBJECT_TRAILER_BYTES;

/** Reads a u32 LE from `b` at `o` without allocating. */
function u32(b: Uint8Array, o: number): number {
  return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
}

/**
 * Client side: checks an object as read from the server (`bytes` = header + data + trailer,
 * at least `expectedLength + OBJECT_OVERHEAD_BYTES` long) against the reference it got: header
 * generation, header length and trailer generation must all match, and the generation must not be
 * 0 (freed or never published). `false` means a stale or torn read: do not use the data.
 * Pure, allocates nothing; the caller owns `bytes`.
 */
export function verifyObject(
  bytes: Uint8Array,
  expectedGeneration: number,
  expectedLength: number,
): boolean {
  if (expectedGeneration === 0 || (expectedGeneration >>> 0) !== expectedGeneration) return false;
  if ((expectedLength >>> 0) !== expectedLength) return false;
  if (bytes.length < expectedLength + OBJECT_OVERHEAD_BYTES) return false;
  return u32(bytes, 0) === expectedGeneration &&
    u32(bytes, 4) === expectedLength &&
    u32(bytes, OBJECT_HEADER_BYTES + expectedLength) === expectedGeneration;
}
