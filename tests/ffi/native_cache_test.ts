/**
 * The per-user cache that a compiled `verbus` writes its embedded native libraries to: content
 * addressed, re-hashed on reuse, rewritten when tampered with, a 0700 directory, and a directory
 * of another user or a symlink refused.
 */
import {
  chmodSync,
  chownSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { cacheNativeFile, sha256Hex } from "../../ffi/native_cache.ts";
import { embeddedBytes, embeddedLibraryPath } from "../../ffi/embedded.ts";

function scratch(): string {
  return mkdtempSync(join(tmpdir(), "verbus-cache-test-"));
}

const BYTES = new Uint8Array(4096).map((_, i) => (i * 31) & 0xff);

test("native cache: written once under its hash, mode 0700, and reused", () => {
  const root = scratch();
  try {
    const dir = join(root, "a", "verbus");
    const p = cacheNativeFile("libx.so", BYTES, dir);
    assertEquals(p, join(dir, `${sha256Hex(BYTES).slice(0, 16)}-libx.so`));
    assertEquals(new Uint8Array(readFileSync(p)), BYTES);
    assertEquals(statSync(dir).mode & 0o777, 0o700);
    assertEquals(statSync(p).mode & 0o777, 0o700);
    const before = statSync(p).mtimeMs;
    assertEquals(cacheNativeFile("libx.so", BYTES, dir), p);
    assertEquals(statSync(p).mtimeMs, before, "an intact copy is not rewritten");
    // other bytes: another file beside it
    const other = cacheNativeFile("libx.so", BYTES.slice(1), dir);
    assert(other !== p);
    assertEquals(readdirSync(dir).sort(), [p, other].map((x) => x.slice(dir.length + 1)).sort());
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("native cache: a copy whose bytes changed is rewritten; a wide dir is made 0700", () => {
  const root = scratch();
  try {
    const dir = join(root, "verbus");
    const p = cacheNativeFile("libx.so", BYTES, dir);
    writeFileSync(p, "not a library");
    chmodSync(dir, 0o755);
    assertEquals(cacheNativeFile("libx.so", BYTES, dir), p);
    assertEquals(new Uint8Array(readFileSync(p)), BYTES);
    assertEquals(statSync(dir).mode & 0o777, 0o700);
    assertEquals(readdirSync(dir).length, 1, "no temporary file left behind");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("native cache: a symlinked dir, a group-writable entry and a bad name are refused", () => {
  const root = scratch();
  try {
    const real = join(root, "real");
    const link = join(root, "link");
    cacheNativeFile("libx.so", BYTES, real);
    symlinkSync(real, link);
    const e = assertThrows(() => cacheNativeFile("libx.so", BYTES, link), VerbusError, "symlink");
    assertEquals(e.code, "UNSAFE_CACHE");
    const p = cacheNativeFile("libx.so", BYTES, real);
    chmodSync(p, 0o720);
    assertThrows(() => cacheNativeFile("libx.so", BYTES, real), VerbusError, "others may write");
    assertThrows(() => cacheNativeFile("../x.so", BYTES, real), VerbusError, "bad cached library");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("native cache: a directory owned by another user is refused, naming the owner", () => {
  const root = scratch();
  try {
    const dir = join(root, "verbus");
    cacheNativeFile("libx.so", BYTES, dir);
    chownSync(dir, 65534, 65534);
    const e = assertThrows(() => cacheNativeFile("libx.so", BYTES, dir), VerbusError, "uid 65534");
    assertEquals(e.code, "UNSAFE_CACHE");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}, { skip: process.getuid?.() === 0 ? false : "needs root to give a directory to another user" });

test("embedded libraries: none outside a compiled binary", () => {
  assertEquals(embeddedBytes("libverbus_helper.so"), undefined);
  assertEquals(embeddedLibraryPath("libverbus_helper.so"), undefined);
});
