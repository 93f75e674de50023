/**
 * Hex codecs for the few binary values that travel inside JSON (nonces, EIDs, segment
 * descriptors): the platform's `Uint8Array.prototype.toHex` / `Uint8Array.fromHex` (both
 * runtimes have them: Deno 2.9, Bun 1.4), with this project's error on bad input. Setup path
 * only: these allocate. Pure; any thread.
 * @module
 */

/** Lower-case hex of `bytes` (two digits a byte). The caller keeps `bytes`. */
export function toHex(bytes: Uint8Array): string {
  return bytes.toHex();
}

/**
 * Bytes of a hex string (even length, digits of either case) in a new array; anything else
 * throws a RangeError quoting the start of the input.
 */
export function fromHex(hex: string): Uint8Array {
  try {
    return Uint8Array.fromHex(hex);
  } catch {
    throw new RangeError(`not a hex byte string: "${hex.slice(0, 40)}"`);
  }
}

/** True when two byte strings are equal (length and content). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
