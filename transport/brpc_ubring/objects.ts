/**
 * The two shm objects of one brpc UBRing connection (layout.ts): this side's, created with
 * O_CREAT|O_EXCL (mode 0600, every page reserved, zero-filled), and the peer's, opened by name.
 * A peer object is opened only when this process's effective uid owns it (brpc creates them
 * 0666 minus the umask; another user's object is never read or written) and only when it holds
 * at least the bytes announced (checked on the descriptor before mapping). The handshake-time
 * writes (tails, CONNECTED flags) are here too. Control path (allocates, may throw VerbusError
 * HANDSHAKE / NATIVE_CALL naming the object).
 *
 * Known limit (as in brpc): a named object can still be shrunk by its creator after it was
 * mapped, and touching the lost pages then faults; the peer is a process of the same user.
 *
 * Threading: the connection's JS thread.
 * @module
 */
import { statSync } from "node:fs";
import { NativeError, VerbusError } from "../../errors.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import { cstringArg } from "../../ffi/strings.ts";
import { O_CLOEXEC, O_RDWR, SEEK_END } from "../../ffi/symbols/libc.ts";
import { MapArena, type Mapped } from "../shm/map_arena.ts";
import { ShmMapping } from "../shm/shm_object.ts";
import { OBJ, ringBlocks, STATE } from "./layout.ts";

/** brpc's connect timeout (s) written into both status queues (`--ub_connect_timeout`). */
const CONNECT_TIMEOUT_S = 1;

/** A peer's object, mapped. */
export interface PeerObject {
  readonly name: string;
  readonly bytes: Uint8Array;
  /** Unmaps (safe twice). */
  close(): void;
}

/**
 * Opens and maps the peer's object `name`, `size` bytes of it. Throws HANDSHAKE when it belongs
 * to another uid, BOUNDS when it is smaller than `size` (the peer lied), NATIVE_CALL (with errno) when it cannot be opened or
 * mapped; nothing stays open or mapped then.
 */
export async function openPeerObject(name: string, size: number): Promise<PeerObject> {
  const libc = await loadLibc();
  const s = libc.symbols;
  const fd = s.shm_open(cstringArg(name), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) throw new NativeError("shm_open", errno(libc), `open the peer's object ${name}`);
  try {
    const owner = statSync(`/proc/self/fd/${fd}`).uid, me = s.geteuid();
    if (owner !== me) {
      throw new VerbusError(
        "HANDSHAKE",
        `the peer's object ${name} belongs to uid ${owner}, not to this process's uid ${me}`,
      );
    }
    const actual = Number(s.lseek(fd, 0, SEEK_END));
    if (!(actual >= size)) {
      throw new VerbusError(
        "BOUNDS",
        `the peer's object ${name} has ${actual} bytes, fewer than the ${size} announced`,
      );
    }
    const m: Mapped = (await MapArena.shared()).map(fd, size, name);
    return { name, bytes: m.bytes, close: m.release };
  } finally {
    s.close(fd);
  }
}

/**
 * Creates this side's object `name` of `size` bytes. Throws NATIVE_CALL naming it when it
 * cannot (EEXIST: a leftover or another connection's; ENOSPC: /dev/shm is full).
 */
export async function createOwnObject(name: string, size: number): Promise<ShmMapping> {
  return await ShmMapping.create(name, size);
}

/** 32-bit views over an object's header (index = byte offset / 4). */
export function headerWords(bytes: Uint8Array): Uint32Array {
  return new Uint32Array(bytes.buffer, bytes.byteOffset, OBJ.DATA / 4);
}

/**
 * The server's writes before its hello: each side's tail starts at the other ring's last block,
 * both connect timeouts, and both receive flags CONNECTED.
 */
export function serverInit(own: Uint8Array, peer: Uint8Array): void {
  const o = headerWords(own), p = headerWords(peer);
  Atomics.store(o, OBJ.TAIL / 4, ringBlocks(peer.length) - 1);
  Atomics.store(o, OBJ.TIMEOUT / 4, CONNECT_TIMEOUT_S);
  Atomics.store(p, OBJ.TAIL / 4, ringBlocks(own.length) - 1);
  Atomics.store(p, OBJ.TIMEOUT / 4, CONNECT_TIMEOUT_S);
  Atomics.store(p, OBJ.RX_FLAG / 4, STATE.CONNECTED);
  Atomics.store(o, OBJ.RX_FLAG / 4, STATE.CONNECTED);
}

/** The client's own connect timeout, written before its hello (as brpc's client does). */
export function clientInit(own: Uint8Array): void {
  Atomics.store(headerWords(own), OBJ.TIMEOUT / 4, CONNECT_TIMEOUT_S);
}

/** The tail the server wrote into the client's object: the server ring's last block. */
export function readTail(own: Uint8Array): number {
  return Atomics.load(headerWords(own), OBJ.TAIL / 4);
}

/** The client's writes once it mapped the server's object: both sides CONNECTED. */
export function clientConnected(own: Uint8Array, peer: Uint8Array): void {
  Atomics.store(headerWords(peer), OBJ.TX_FLAG / 4, STATE.CONNECTED);
  Atomics.store(headerWords(own), OBJ.RX_FLAG / 4, STATE.CONNECTED);
}
