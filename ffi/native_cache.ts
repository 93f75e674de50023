/**
 * A per-user cache of native libraries that a single-file build carries inside itself: dlopen
 * needs a real file, so an embedded library is written once to
 * `$XDG_CACHE_HOME/verbus` (or `~/.cache/verbus`) under a name that holds the SHA-256 of its
 * bytes, and reused after its bytes are hashed again. The directory is made mode 0700 and a
 * directory owned by another user (or a symlink) is refused; a file that changed is rewritten
 * (a fresh temporary file renamed over it, so no reader ever sees a half-written library).
 * Synchronous, any thread; every call re-checks (nothing is remembered between calls).
 * @module
 */
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { VerbusError } from "../errors.ts";
import { getEnv } from "./runtime.ts";

/**
 * The cache directory of this user: `$XDG_CACHE_HOME/verbus`, else `$HOME/.cache/verbus`.
 * Throws {@link VerbusError} `UNSAFE_CACHE` when neither variable is set.
 */
export function nativeCacheDir(): string {
  const xdg = getEnv("XDG_CACHE_HOME");
  if (xdg && xdg.startsWith("/")) return join(xdg, "verbus");
  const home = getEnv("HOME");
  if (home) return join(home, ".cache", "verbus");
  throw new VerbusError(
    "UNSAFE_CACHE",
    "no cache directory: neither XDG_CACHE_HOME nor HOME is set",
  );
}

function myUid(): number {
  return typeof process.getuid === "function" ? process.getuid() : -1;
}

/** Makes `dir` (and missing parents, 0700); refuses a symlink or a directory of another user. */
function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) {
    throw new VerbusError(
      "UNSAFE_CACHE",
      `cache ${dir} is not a directory (a symlink?); refusing it`,
    );
  }
  const uid = myUid();
  if (uid >= 0 && st.uid !== uid) {
    throw new VerbusError(
      "UNSAFE_CACHE",
      `cache ${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}); refusing it ` +
        "(set XDG_CACHE_HOME to a directory of your own)",
      { context: { dir, owner: st.uid, uid } },
    );
  }
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** SHA-256 of `bytes`, hex. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The bytes at `path` when it is a regular file of this user; undefined when absent. */
function readOwnFile(path: string): Uint8Array | undefined {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return undefined;
  }
  const uid = myUid();
  if (!st.isFile() || (uid >= 0 && st.uid !== uid) || (st.mode & 0o022) !== 0) {
    throw new VerbusError(
      "UNSAFE_CACHE",
      `cache entry ${path} is not a regular file of this user, or others may write it; refusing it`,
      { context: { path } },
    );
  }
  return readFileSync(path);
}

/**
 * Returns the path of a cached copy of `bytes` named `name` (a library file name such as
 * `libverbus_helper.so`), writing it when absent or when the copy there no longer hashes to the
 * same SHA-256. `dir` defaults to {@link nativeCacheDir}. The caller keeps `bytes`.
 * Throws {@link VerbusError} `UNSAFE_CACHE` for a directory or file it must not trust, and the
 * file system's error when it cannot write.
 */
export function cacheNativeFile(name: string, bytes: Uint8Array, dir = nativeCacheDir()): string {
  if (name.includes("/") || name === "" || name.startsWith(".")) {
    throw new VerbusError("INVALID_ARGUMENT", `bad cached library name ${JSON.stringify(name)}`);
  }
  ensurePrivateDir(dir);
  const hash = sha256Hex(bytes);
  const path = join(dir, `${hash.slice(0, 16)}-${name}`);
  const there = readOwnFile(path);
  if (there && sha256Hex(there) === hash) return path;
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    writeFileSync(tmp, bytes, { mode: 0o700, flag: "wx" });
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch { /* never written */ }
    throw e;
  }
  return path;
}
