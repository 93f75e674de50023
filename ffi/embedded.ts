/**
 * Native libraries carried inside the single-file `verbus` binary (`make binary` passes
 * build/libverbus_helper.so and build/urma_sim/liburma.so.0 to `bun build --compile` as extra
 * entry points, named by their file name). Bun lists them in `Bun.embeddedFiles`; this module
 * finds one by name and hands back the path of a real copy in the per-user cache
 * (ffi/native_cache.ts), which dlopen can open. Outside a compiled binary (Deno, `bun run`)
 * nothing is embedded and every lookup answers undefined. Synchronous, any thread.
 * @module
 */
import { readFileSync } from "node:fs";
import { cacheNativeFile } from "./native_cache.ts";

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** Where Bun mounts a compiled binary's embedded files. */
const BUNFS_ROOT = "/$bunfs/root/";

/** Names of the files embedded in this binary (empty outside a compiled Bun binary). */
export function embeddedNames(): string[] {
  const files = g.Bun?.embeddedFiles;
  if (!Array.isArray(files)) return [];
  return files.map((f: { name?: string }) => String(f.name ?? ""));
}

/** The bytes of the embedded file `name`, or undefined when this binary carries none. */
export function embeddedBytes(name: string): Uint8Array | undefined {
  const files = g.Bun?.embeddedFiles;
  if (!Array.isArray(files)) return undefined;
  const blob = files.find((f: { name?: string }) => f.name === name);
  if (!blob) return undefined;
  const bytes = readFileSync(BUNFS_ROOT + name);
  if (bytes.length !== blob.size) {
    throw new Error(`embedded ${name}: read ${bytes.length} bytes of ${blob.size}`);
  }
  return bytes;
}

/**
 * The path of a cached, hash-checked copy of the embedded file `name`, written on first use;
 * undefined when this binary carries no such file. Throws what
 * {@link cacheNativeFile} throws (a cache directory of another user, a full disk).
 */
export function embeddedLibraryPath(name: string): string | undefined {
  const bytes = embeddedBytes(name);
  return bytes ? cacheNativeFile(name, bytes) : undefined;
}
