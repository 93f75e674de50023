/**
 * The FFI entry point: picks the backend for the running runtime by dynamic import
 * (oak's pattern: one file per runtime behind one interface) and caches it.
 * @module
 */
import { VerbusError } from "../errors.ts";
import { RUNTIME } from "./runtime.ts";
import type { FfiBackend } from "./types.ts";

let backend: FfiBackend | null = null;

/**
 * Backends linked in statically by a single-file build (`bun build --compile`, see
 * cli/verbus_bun.ts), which cannot follow the runtime-chosen dynamic imports. Set before any
 * verbus module is evaluated; absent otherwise.
 */
export interface PresetBackends {
  ffi?: FfiBackend;
  tcp?: unknown;
}

/** The preset backends, if a single-file build installed them. */
export function presetBackends(): PresetBackends | undefined {
  return (globalThis as Record<symbol, PresetBackends | undefined>)[Symbol.for("verbus.backends")];
}

/**
 * The FFI backend of this runtime. Loads it on first use; setup code awaits this once,
 * then uses {@link ffiSync}.
 */
export async function ffi(): Promise<FfiBackend> {
  if (backend) return backend;
  if (RUNTIME === "unsupported") {
    throw new VerbusError(
      "UNSUPPORTED_RUNTIME",
      "verbus runs on Deno or Bun; this runtime is neither",
    );
  }
  const preset = presetBackends()?.ffi;
  if (preset) return (backend = preset);
  // A non-literal specifier: Deno's type checker must not follow the Bun file, and vice versa.
  const file = RUNTIME === "deno" ? "./deno.ts" : "./bun.ts";
  const mod = await import(file) as { backend: FfiBackend };
  backend = mod.backend;
  return backend;
}

/** The backend, after {@link ffi} has resolved once. Throws if it has not. */
export function ffiSync(): FfiBackend {
  if (!backend) throw new VerbusError("UNSUPPORTED_RUNTIME", "ffi() was not awaited before use");
  return backend;
}
