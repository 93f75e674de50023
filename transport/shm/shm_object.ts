/**
 * POSIX shared-memory objects for the shm fabric: create (server) / open (client) a named
 * object, map it, unmap it, unlink it — and remove objects a dead process left behind.
 * Names are `/verbus-<pid>-<session>`; the creating pid in the name is what crash recovery uses.
 * Control path only.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { NativeError } from "../../errors.ts";
import { ffi } from "../../ffi/ffi.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import type { Library } from "../../ffi/loader.ts";
import { cstringArg } from "../../ffi/strings.ts";
import { type LIBC_SYMBOLS, O_CREAT, O_EXCL, O_RDWR } from "../../ffi/symbols/libc.ts";
import type { FfiBackend, NonNullPtr } from "../../ffi/types.ts";
import { MapArena, type Mapped } from "./map_arena.ts";

/** The shm object name of session `session` created by process `pid`. */
export function shmName(pid: number, session: number): string {
  return `/verbus-${pid}-${session}`;
}

/** Session objects (`verbus-<pid>-<session>`) and notify pages (`verbus-<pid>-n<hex>`). */
const NAME_RE = /^verbus-(\d+)-(?:\d+|n[0-9a-f]+)$/;

/**
 * True when process `pid` runs: signal 0 reaches it (or it belongs to another user) and it is
 * not a zombie (dead, waiting for its parent to reap it: its objects are orphans already).
 */
export function processAlive(pid: number): boolean {
  try {
    // deno-lint-ignore no-explicit-any
    (globalThis as any).process.kill(pid, 0);
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false; // gone between the signal and the read
  }
}

/**
 * Crash recovery: unlinks every `/dev/shm/verbus-<pid>-*` whose pid is dead. Returns the names
 * removed. Called when a server starts.
 */
export async function removeStaleShmObjects(dir = "/dev/shm"): Promise<string[]> {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const libc = await loadLibc();
  const removed: string[] = [];
  for (const n of names) {
    const m = NAME_RE.exec(n);
    if (!m || processAlive(Number(m[1]))) continue;
    if (libc.symbols.shm_unlink(cstringArg(`/${n}`)) === 0) removed.push(`/${n}`);
  }
  return removed;
}

/**
 * A mapped shm object, mapped by this thread's {@link MapArena}. The mapping lives until close();
 * the name until unlink().
 */
export class ShmMapping extends NativeHandle {
  /** The whole mapping as bytes (zero-copy view of shared memory). */
  readonly bytes: Uint8Array;
  /** Base address of the mapping. */
  readonly address: bigint;
  #unlinked = false;

  private constructor(
    private readonly libc: Library<typeof LIBC_SYMBOLS>,
    private readonly f: FfiBackend,
    mapped: Mapped,
    readonly name: string,
    readonly size: number,
  ) {
    super(`shm ${name}`, f.fromAddress(mapped.address) as NonNullPtr, null, mapped.release);
    this.bytes = mapped.bytes;
    this.address = mapped.address;
  }

  /** Creates (O_EXCL) and maps a new object of `size` bytes (zero-filled by the kernel). */
  static async create(name: string, size: number): Promise<ShmMapping> {
    return await ShmMapping.#open(name, size, true);
  }

  /** Opens and maps an existing object; `size` must not exceed the object's size. */
  static async open(name: string, size: number): Promise<ShmMapping> {
    return await ShmMapping.#open(name, size, false);
  }

  static async #open(name: string, size: number, create: boolean): Promise<ShmMapping> {
    const f = await ffi();
    const libc = await loadLibc();
    const s = libc.symbols;
    const cname = cstringArg(name);
    const fd = s.shm_open(cname, create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0o600);
    if (fd < 0) {
      throw new NativeError("shm_open", errno(libc), `${create ? "create" : "open"} ${name}`);
    }
    try {
      if (create && s.ftruncate(fd, size) !== 0) {
        const e = errno(libc);
        s.shm_unlink(cname);
        throw new NativeError("ftruncate", e, `${name} to ${size} bytes`);
      }
      // Past a budget, in a SharedArrayBuffer chunk: see map_arena.ts (V8's external memory).
      let mapped: Mapped;
      try {
        mapped = (await MapArena.shared()).map(fd, size, name);
      } catch (e) {
        if (create) s.shm_unlink(cname);
        throw e;
      }
      return new ShmMapping(libc, f, mapped, name, size);
    } finally {
      s.close(fd);
    }
  }

  /** A pointer to byte `offset` of the mapping (for futex calls). */
  pointerAt(offset: number): NonNullPtr {
    return this.f.fromAddress(this.address + BigInt(offset)) as NonNullPtr;
  }

  /** Removes the name (the memory stays until every process unmapped it). Safe twice. */
  unlink(): void {
    if (this.#unlinked) return;
    this.#unlinked = true;
    this.libc.symbols.shm_unlink(cstringArg(this.name));
  }
}
