/**
 * Shared memory for the shm fabric: named POSIX objects (notify pages; `/verbus-<pid>-…`, the
 * creating pid in the name is what crash recovery uses) and sealed memfds (session regions).
 *
 * A session region is a memfd sealed with `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL` before it
 * is mapped: no process — not the peer, not another process of the same user — can change its
 * size under a mapping, so nobody can make a mapping SIGBUS. It has no name anywhere: the peer
 * opens it through `/proc/<creator pid>/fd/<fd>` (which the kernel grants only to processes
 * allowed to ptrace-read the creator, i.e. the ones that could read its memory anyway), checks
 * the seals and the size (`lseek(SEEK_END)`, the `st_size` fstat reports) before it maps, and
 * closes its fd once mapped; the creator closes its own once the peer proved it mapped, so the
 * object lives exactly as long as the two mappings and dies with the processes (a crash leaves
 * nothing behind).
 * Control path only.
 * @module
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { NativeError } from "../../errors.ts";
import { ffi } from "../../ffi/ffi.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import type { Library } from "../../ffi/loader.ts";
import { cstringArg } from "../../ffi/strings.ts";
import {
  F_ADD_SEALS,
  F_GET_SEALS,
  F_SEAL_GROW,
  F_SEAL_SEAL,
  F_SEAL_SHRINK,
  type LIBC_SYMBOLS,
  MFD_ALLOW_SEALING,
  MFD_CLOEXEC,
  O_CLOEXEC,
  O_CREAT,
  O_EXCL,
  O_RDWR,
  SEEK_END,
} from "../../ffi/symbols/libc.ts";
import { VerbusError } from "../../errors.ts";
import type { FfiBackend, NonNullPtr } from "../../ffi/types.ts";
import { MapArena, type Mapped } from "./map_arena.ts";

/** The shm object name of session `session` created by process `pid`. */
export function shmName(pid: number, session: number): string {
  return `/verbus-${pid}-${session}`;
}

/** Session objects (`verbus-<pid>-<session>`) and notify pages (`verbus-<pid>-n<hex>`). */
const NAME_RE = /^verbus-(\d+)-(?:\d+|n[0-9a-f]+)$/;

/**
 * True when process `pid` runs: signal 0 reaches it (or it belongs to another user), it is not a
 * zombie (dead, waiting for its parent to reap it: its objects are orphans already) and it is not
 * in the middle of exiting (its fds are already closed).
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
    if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z") return false;
  } catch {
    return false; // gone between the signal and the read
  }
  // A process that is exiting has closed its files (that is how its peers' sockets closed)
  // before it turns zombie: no fd left means it is dying.
  try {
    return readdirSync(`/proc/${pid}/fd`).length > 0;
  } catch (e) {
    return (e as { code?: string }).code !== "ENOENT"; // EACCES: another user's, alive
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

/** This process's effective uid: the only owner whose shared objects it uses. */
export async function effectiveUid(): Promise<number> {
  return (await loadLibc()).symbols.geteuid();
}

/**
 * Throws HANDSHAKE unless the object open on `fd` belongs to this process's effective uid (and,
 * for a named object, grants nobody else access): the kernel's word for who created it, read
 * through `/proc/self/fd` from the descriptor itself, so no name can be swapped in between. A
 * memfd's own mode is always 0777 — who may open it is decided by `/proc/<pid>/fd`'s ptrace
 * check — so only its owner is checked.
 */
function checkOwner(libc: Library<typeof LIBC_SYMBOLS>, fd: number, what: string, named: boolean) {
  const st = statSync(`/proc/self/fd/${fd}`);
  const me = libc.symbols.geteuid();
  if (st.uid !== me) {
    throw new VerbusError(
      "HANDSHAKE",
      `${what} is owned by uid ${st.uid}, not by this process's uid ${me}: another user created ` +
        "it, so nothing is read from or written to it",
    );
  }
  if (named && (st.mode & 0o077) !== 0) {
    throw new VerbusError(
      "HANDSHAKE",
      `${what} has mode 0${(st.mode & 0o777).toString(8)}: other users may open it (need 0600)`,
    );
  }
}

/**
 * Reserves the first `bytes` of `fd` now (`fallocate`), so a full tmpfs or a memory limit is an
 * error here, naming the object and the size — and never a SIGBUS at the first touch of a page
 * nothing backs (tmpfs objects sized by ftruncate are sparse).
 */
function reservePages(libc: Library<typeof LIBC_SYMBOLS>, fd: number, what: string, bytes: number) {
  if (bytes > 0 && libc.symbols.fallocate(fd, 0, 0, bytes) !== 0) {
    throw new NativeError("fallocate", errno(libc), `reserving ${bytes} bytes of ${what}`);
  }
}

/** The seals a session memfd carries (both sides insist on all of them). */
export const SESSION_SEALS = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

/**
 * A mapped shm object, mapped by this thread's {@link MapArena}. The mapping lives until close();
 * the way others open it (a name, or the creator's memfd fd) until unlink().
 */
export class ShmMapping extends NativeHandle {
  /** The whole mapping as bytes (zero-copy view of shared memory). */
  readonly bytes: Uint8Array;
  /** Base address of the mapping. */
  readonly address: bigint;
  #unlinked = false;
  /** A sealed memfd's fd, held open by its creator until unlink() (-1: none). */
  #fd: number;
  /** A named POSIX object (unlink() removes the name) rather than a memfd. */
  readonly #named: boolean;

  private constructor(
    private readonly libc: Library<typeof LIBC_SYMBOLS>,
    private readonly f: FfiBackend,
    mapped: Mapped,
    readonly name: string,
    readonly size: number,
    opener: number | "named",
  ) {
    super(`shm ${name}`, f.fromAddress(mapped.address) as NonNullPtr, null, mapped.release);
    this.bytes = mapped.bytes;
    this.address = mapped.address;
    this.#fd = opener === "named" ? -1 : opener;
    this.#named = opener === "named";
  }

  /** The fd of a sealed memfd its creator still holds (-1 once unlinked, or for a named object). */
  get fd(): number {
    return this.#fd;
  }

  /**
   * Creates a sealed memfd of `size` bytes (`name` only labels it in /proc/<pid>/maps), maps it
   * and keeps its fd open: a peer opens `/proc/<this pid>/fd/<fd>` until {@link unlink}.
   * The first `reserve` bytes are backed now (NATIVE_CALL with ENOSPC/ENOMEM naming the object
   * when they cannot be): the small objects and headers every peer relies on. The rest stays
   * sparse — a memfd lives on the kernel's internal tmpfs (a full /dev/shm does not reach it), and
   * reserving a session region would commit the whole data pool of every idle session.
   */
  static async createSealed(name: string, size: number, reserve = 0): Promise<ShmMapping> {
    const f = await ffi();
    const libc = await loadLibc();
    const s = libc.symbols;
    const fd = s.memfd_create(cstringArg(name.replace(/^\//, "")), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) throw new NativeError("memfd_create", errno(libc), `${name}, ${size} bytes`);
    try {
      if (s.ftruncate(fd, size) !== 0) {
        throw new NativeError("ftruncate", errno(libc), `${name} to ${size} bytes`);
      }
      reservePages(libc, fd, name, Math.min(reserve, size));
      if (s.fcntl(fd, F_ADD_SEALS, SESSION_SEALS) !== 0) {
        throw new NativeError("fcntl", errno(libc), `F_ADD_SEALS on ${name}`);
      }
      const actual = Number(s.lseek(fd, 0, SEEK_END)); // sealed: it can no longer change
      if (actual !== size) {
        throw new VerbusError(
          "NATIVE_CALL",
          `${name} has ${actual} bytes after ftruncate to ${size}`,
        );
      }
      // Past a budget, in a SharedArrayBuffer chunk: see map_arena.ts (V8's external memory).
      const mapped = (await MapArena.shared()).map(fd, size, name);
      return new ShmMapping(libc, f, mapped, name, size, fd);
    } catch (e) {
      s.close(fd);
      throw e;
    }
  }

  /**
   * Opens the sealed memfd `fd` of process `pid` (through /proc), checks that this process's uid
   * owns it, that it carries {@link SESSION_SEALS} and is exactly `size` bytes, maps it and closes
   * the fd. Throws HANDSHAKE naming what is wrong (another owner, not sealed, another size) and
   * NATIVE_CALL when it cannot be opened or mapped; nothing stays open or mapped then.
   */
  static async openSealed(
    pid: number,
    fd: number,
    size: number,
    name: string,
  ): Promise<ShmMapping> {
    const f = await ffi();
    const libc = await loadLibc();
    const s = libc.symbols;
    const path = `/proc/${pid}/fd/${fd}`;
    const own = s.open(cstringArg(path), O_RDWR | O_CLOEXEC, 0);
    if (own < 0) throw new NativeError("open", errno(libc), path);
    try {
      checkOwner(libc, own, `${path} (${name})`, false);
      const seals = s.fcntl(own, F_GET_SEALS, 0);
      if (seals < 0 || (seals & SESSION_SEALS) !== SESSION_SEALS) {
        throw new VerbusError(
          "HANDSHAKE",
          `${path} (${name}) is not a sealed memfd (seals ${seals}, need shrink, grow and seal): ` +
            "its size could change under the mapping",
        );
      }
      const actual = Number(s.lseek(own, 0, SEEK_END));
      if (actual !== size) {
        throw new VerbusError(
          "HANDSHAKE",
          `${path} (${name}) has ${actual} bytes, the offer says ${size}`,
        );
      }
      const mapped = (await MapArena.shared()).map(own, size, path);
      return new ShmMapping(libc, f, mapped, name, size, -1);
    } finally {
      s.close(own);
    }
  }

  /** Unmaps (and closes a memfd's fd still held; a name stays until unlink()). Safe twice. */
  override close(): void {
    if (this.#fd >= 0) this.unlink();
    super.close();
  }

  /**
   * Creates (O_EXCL, mode 0600) and maps a new named object of `size` bytes, every page reserved
   * (zero-filled by the kernel). For benches and tests: what peers map is a sealed memfd.
   */
  static async create(name: string, size: number): Promise<ShmMapping> {
    return await ShmMapping.#open(name, size, true);
  }

  /**
   * Opens and maps an existing named object of this uid (mode 0600) holding at least `size`
   * bytes (checked on the descriptor before mapping). A shrink after mapping still faults: named
   * objects are for benches and tests.
   */
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
      if (create) {
        try {
          if (s.ftruncate(fd, size) !== 0) {
            throw new NativeError("ftruncate", errno(libc), `${name} to ${size} bytes`);
          }
          reservePages(libc, fd, name, size);
        } catch (e) {
          s.shm_unlink(cname);
          throw e;
        }
      } else {
        checkOwner(libc, fd, name, true);
        const actual = Number(s.lseek(fd, 0, SEEK_END));
        if (actual < size) {
          throw new VerbusError("HANDSHAKE", `${name} has ${actual} bytes, need ${size}`);
        }
      }
      // Past a budget, in a SharedArrayBuffer chunk: see map_arena.ts (V8's external memory).
      let mapped: Mapped;
      try {
        mapped = (await MapArena.shared()).map(fd, size, name);
      } catch (e) {
        if (create) s.shm_unlink(cname);
        throw e;
      }
      return new ShmMapping(libc, f, mapped, name, size, "named");
    } finally {
      s.close(fd);
    }
  }

  /** A pointer to byte `offset` of the mapping (for futex calls). */
  pointerAt(offset: number): NonNullPtr {
    return this.f.fromAddress(this.address + BigInt(offset)) as NonNullPtr;
  }

  /**
   * Removes the way others open the object — its name, or (memfd) the fd its creator held — while
   * the memory stays until every process unmapped it. Safe twice.
   */
  unlink(): void {
    if (this.#unlinked) return;
    this.#unlinked = true;
    if (this.#fd >= 0) {
      this.libc.symbols.close(this.#fd);
      this.#fd = -1;
    } else if (this.#named) this.libc.symbols.shm_unlink(cstringArg(this.name));
  }
}
