/**
 * Explicit library loading that never crashes the process: a missing library is a capability,
 * reported with every path tried. Each library is looked for in order:
 *   1. the env override (`VERBUS_LIBIBVERBS`, `VERBUS_LIBRDMACM`, `VERBUS_LIBURMA`, `VERBUS_HELPER`);
 *   2. the bundled build (`<repo>/build/<file>`, or next to a compiled `verbus` executable), then
 *      the copy a compiled `verbus` carries inside itself, written to the per-user cache
 *      (ffi/embedded.ts);
 *   3. the versioned soname(s), resolved by the system loader.
 * Every attempt is recorded; when none works the caller gets a {@link LibraryLoadError} listing
 * them all (or, through {@link probeLibrary}, the attempts as data for `verbus doctor`).
 * @module
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ClosedError, LibraryLoadError, type LoadAttempt } from "../errors.ts";
import { embeddedLibraryPath } from "./embedded.ts";
import { ffi } from "./ffi.ts";
import { nativeCacheDir } from "./native_cache.ts";
import { getEnv, RUNTIME } from "./runtime.ts";
import type { NonblockingOf, RawLibrary, SymbolsOf, SymbolTable } from "./types.ts";

/** Where and how to find one native library. */
export interface LibrarySpec<T extends SymbolTable> {
  /** Logical name used in messages: `libibverbs`, `librdmacm`, `liburma`, `helper`, `libc`. */
  readonly name: string;
  /** Env variable holding an explicit path. */
  readonly envVar?: string;
  /** File name of a bundled build (looked for in the build directories). */
  readonly bundled?: string;
  /** Versioned sonames, tried in order. */
  readonly sonames: readonly string[];
  /** The symbol table. */
  readonly table: T;
  /** What to do when no candidate loads (appended to the {@link LibraryLoadError}). */
  readonly hint?: () => string;
}

/**
 * Directories that may hold bundled builds: `$VERBUS_HOME/build`, `<repo>/build`, the exe's dir.
 * Inside a compiled binary the modules live in Bun's virtual `/$bunfs/`, which is never listed.
 */
export function buildDirs(): string[] {
  const dirs: string[] = [];
  const home = getEnv("VERBUS_HOME");
  if (home) dirs.push(join(home, "build"));
  try {
    const url = new URL("../build/", import.meta.url);
    if (url.protocol === "file:" && !url.pathname.includes("/$bunfs/")) {
      dirs.push(fileURLToPath(url));
    }
  } catch { /* not a file URL (compiled binary) */ }
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const exe: string | undefined = RUNTIME === "deno" ? g.Deno.execPath() : g.process?.execPath;
  if (exe) dirs.push(join(dirname(exe), "build"), dirname(exe));
  return [...new Set(dirs)];
}

/** A loaded native library. Owns its handle: `close()` (safe twice) unloads it. */
export class Library<T extends SymbolTable> {
  #raw: RawLibrary<T> | null;

  /** @internal use {@link loadLibrary}. */
  constructor(
    raw: RawLibrary<T>,
    /** The path or soname that worked. */
    readonly path: string,
    /** Where that path came from. */
    readonly source: LoadAttempt["source"],
    /** The attempts that failed before it. */
    readonly attempts: readonly LoadAttempt[],
  ) {
    this.#raw = raw;
  }

  /** Synchronous calls. Throws {@link ClosedError} after close(). */
  get symbols(): SymbolsOf<T> {
    if (!this.#raw) throw new ClosedError(`library ${this.path}`);
    return this.#raw.symbols;
  }

  /** Promise-returning calls of the table's `nonblocking` symbols. */
  get nonblocking(): NonblockingOf<T> {
    if (!this.#raw) throw new ClosedError(`library ${this.path}`);
    return this.#raw.nonblocking;
  }

  /** Optional symbols this library lacks. */
  get missing(): readonly string[] {
    return this.#raw?.missing ?? [];
  }

  /** True until close(). */
  get isOpen(): boolean {
    return this.#raw !== null;
  }

  /** Unloads the library. Every handle created through it must be closed first. Safe twice. */
  close(): void {
    const raw = this.#raw;
    this.#raw = null;
    raw?.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** The result of probing: the library, or the error with every attempt. Never throws. */
export type ProbeResult<T extends SymbolTable> =
  | { ok: true; library: Library<T> }
  | { ok: false; error: LibraryLoadError };

/** Tries every candidate of `spec` in order; never throws. */
export async function probeLibrary<T extends SymbolTable>(
  spec: LibrarySpec<T>,
): Promise<ProbeResult<T>> {
  const backend = await ffi();
  const attempts: LoadAttempt[] = [];
  // `path` is a function for the embedded copy: it is written to the cache only when reached.
  const candidates: Array<{ source: LoadAttempt["source"]; path: string | (() => string) }> = [];
  const fromEnv = spec.envVar ? getEnv(spec.envVar) : undefined;
  if (fromEnv) candidates.push({ source: "env", path: fromEnv });
  const bundled = spec.bundled;
  if (bundled) {
    for (const d of buildDirs()) candidates.push({ source: "bundled", path: join(d, bundled) });
    candidates.push({ source: "embedded", path: () => embeddedLibraryPath(bundled) ?? "" });
  }
  for (const s of spec.sonames) candidates.push({ source: "system", path: s });

  for (const c of candidates) {
    let path: string;
    try {
      path = typeof c.path === "string" ? c.path : c.path();
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      attempts.push({ source: c.source, path: safeCacheDir(), reason });
      continue;
    }
    if (path === "") continue; // nothing embedded (not a compiled binary)
    if (path.includes("/") && !existsSync(path)) {
      attempts.push({ source: c.source, path, reason: "file not found" });
      continue;
    }
    try {
      const raw = backend.open(path, spec.table);
      return { ok: true, library: new Library(raw, path, c.source, attempts) };
    } catch (e) {
      const reason = (e instanceof Error ? e.message : String(e)).split("\n")[0]
        .replace(/^(Could not open library: )+/, "");
      attempts.push({ source: c.source, path, reason });
    }
  }
  return { ok: false, error: new LibraryLoadError(spec.name, attempts, spec.hint?.()) };
}

function safeCacheDir(): string {
  try {
    return nativeCacheDir();
  } catch {
    return "(no cache directory)";
  }
}

/** Loads `spec` or throws {@link LibraryLoadError} listing every path tried. */
export async function loadLibrary<T extends SymbolTable>(
  spec: LibrarySpec<T>,
): Promise<Library<T>> {
  const r = await probeLibrary(spec);
  if (!r.ok) throw r.error;
  return r.library;
}
