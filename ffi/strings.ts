/**
 * C string helpers shared by every binding.
 * @module
 */
const encoder = new TextEncoder();

/** Encodes `s` as a NUL-terminated UTF-8 buffer for a `const char *` argument. Caller owns it. */
export function cstringArg(s: string): Uint8Array {
  const b = new Uint8Array(s.length * 3 + 1);
  const { written } = encoder.encodeInto(s, b);
  return b.subarray(0, written + 1);
}

/** Decodes a NUL-terminated string out of a fixed-size char array (e.g. `fw_ver[64]`). */
export function fixedCString(bytes: Uint8Array): string {
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(end < 0 ? bytes : bytes.subarray(0, end));
}
