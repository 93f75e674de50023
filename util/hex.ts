/**
 * Hex codecs for the few binary values that travel inside JSON (nonces, EIDs, segment
 * descriptors). Setup path only: these allocate. Pure; any thread.
 * @module
 */

/** Lower-case hex of `bytes` (two digits a byte). */
export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += (bytes[i] < 16 ? "0" : "") + bytes[i].toString(16);
  return s;
}

/** Bytes of a hex string the caller validated (even length, [0-9a-f]); throws on anything else. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new RangeError(`not a hex byte string: "${hex.slice(0, 40)}"`);
  }
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** True when two byte strings are equal (length and content). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
