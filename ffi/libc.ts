/**
 * libc, loaded once per process, and errno. Read errno right after the failing call, on the
 * same thread, before any other native call.
 * @module
 */
import { ffiSync } from "./ffi.ts";
import { type Library, loadLibrary } from "./loader.ts";
import { LIBC_SPEC, type LIBC_SYMBOLS } from "./symbols/libc.ts";

let cached: Promise<Library<typeof LIBC_SYMBOLS>> | null = null;

/** libc for this process (loaded on first use, never closed). */
export function loadLibc(): Promise<Library<typeof LIBC_SYMBOLS>> {
  cached ??= loadLibrary(LIBC_SPEC);
  cached.catch(() => (cached = null));
  return cached;
}

/** The calling thread's errno. `libc` must be loaded. */
export function errno(libc: Library<typeof LIBC_SYMBOLS>): number {
  const p = libc.symbols.__errno_location();
  return p === null ? 0 : ffiSync().readI32(p, 0);
}
