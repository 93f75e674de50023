/**
 * Data path of the shm fabric: one-sided writes and reads are copies into / out of the peer's
 * half of the session's shared mapping; publication words use Atomics; completions are
 * synthesized in posting order into a preallocated ring; the doorbell is a shared futex word.
 *
 * Mapping of one session (created by the server, mapped by the client; see handshake.ts):
 * ```
 *  0                      serverSize                 serverSize + clientSize
 *  ├──── server region ────┼──────── client region ────────┤
 *  each region begins with its fabric header (transport/control_page.ts: doorbell, sleeping)
 * ```
 * Endpoints are made connected by `handshake.ts`; faults: `fail` and `fail-next-write` can be
 * injected (copies through a mapping have no remote key and no bounds to break beyond the checks
 * made here).
 * @module
 */
import { VerbusError } from "../../errors.ts";
import { FABRIC_HEADER } from "../control_page.ts";
import { type Completions, type FabricEndpoint, FAILED, FULL, OK, SIGNALED } from "../fabric.ts";
import type { FabricFaults, FaultKind } from "../faults.ts";
import type { Helper } from "../../ffi/helper.ts";
import type { NonNullPtr } from "../../ffi/types.ts";
import type { ReadinessToken } from "../readiness.ts";
import type { PeerNotifyPage, ProcessNotifyPage } from "./notify_page.ts";
import type { ShmMapping } from "./shm_object.ts";
import { CompletionRing } from "../completion_ring.ts";
import { loadAcquire, storeRelease } from "../word_order.ts";

/** Completion records the endpoint can hold before a poll (signaled posts beyond it get FULL). */
const CQ_DEPTH = 4096;
/** Status of a synthesized completion: success. */
const WC_SUCCESS = 0;

/** Where this side's region and the peer's region lie in the mapping (byte offsets and sizes, page aligned). */
export interface ShmHalves {
  /** Start of my region (its fabric header) in the mapping. */
  localOffset: number;
  /** Bytes of my region. */
  localSize: number;
  /** Start of the peer's region in the mapping. */
  remoteOffset: number;
  /** Bytes of the peer's region. */
  remoteSize: number;
}

/**
 * Readiness of one session (see notify_page.ts): the token peers announce for this side on this
 * process's page, and the peer's page and token this side announces on. The endpoint owns one
 * token and one reference to the peer page, released by close().
 */
export interface ShmNotify {
  readonly own: ProcessNotifyPage;
  readonly ownToken: number;
  readonly peer: PeerNotifyPage;
  readonly peerToken: number;
}

/** Fault kinds the shm fabric can inject. */
const SHM_FAULTS: readonly FaultKind[] = ["fail", "fail-next-write"];

/**
 * The shm fabric endpoint of one session side: `local` and the peer's region are views of the
 * session's shared mapping, owned by this endpoint (released by close()). Single JS thread (the
 * one that created it); `waitInbound` blocks off-thread.
 */
export class ShmEndpoint implements FabricEndpoint {
  readonly kind = "shm" as const;
  readonly simulated = false;
  /** `write` is a memcpy from any bytes into the peer's mapping (BULK skips staging). */
  readonly writesFromAnyMemory = true;
  readonly local: Uint8Array;
  readonly remoteSize: number;
  readonly #remote: Uint8Array;
  readonly #remoteI32: Int32Array;
  readonly #localI32: Int32Array;
  readonly #localDoorbell: NonNullPtr;
  readonly #remoteDoorbell: NonNullPtr;
  readonly #cq = new CompletionRing(CQ_DEPTH);
  #failed: string | null = null;
  #closed = false;
  #waiters = 0;
  /** The faults port armed `fail-next-write`: the next write is refused. */
  #failNextWrite = false;
  /** Where the peer announces work for this side (undefined without notify pages). */
  readonly readiness: ReadinessToken | undefined;

  /** The faults port: `fail` and `fail-next-write` (other kinds throw INVALID_ARGUMENT). */
  readonly faults: FabricFaults = {
    supported: SHM_FAULTS,
    inject: (kind: FaultKind, reason?: string): void => {
      if (kind === "fail-next-write") {
        this.#failNextWrite = true;
        return;
      }
      if (kind !== "fail") {
        throw new VerbusError(
          "INVALID_ARGUMENT",
          `the shm fabric cannot inject "${kind}" (supported: ${SHM_FAULTS.join(", ")})`,
        );
      }
      this.fail(reason ?? "injected fault");
    },
  };

  /**
   * @param mapping the session's mapping; the endpoint owns it (close() unlinks the name if
   *   still linked, then unmaps)
   * @param halves where each side's region lies
   * @param helper for futex wait/wake
   * @param notify readiness of the session (null: the peer or this process has no notify page;
   *   the engine then polls this endpoint every turn)
   */
  constructor(
    readonly mapping: ShmMapping,
    halves: ShmHalves,
    private readonly helper: Helper,
    private readonly notify: ShmNotify | null = null,
  ) {
    const b = mapping.bytes;
    this.local = b.subarray(halves.localOffset, halves.localOffset + halves.localSize);
    this.#remote = b.subarray(halves.remoteOffset, halves.remoteOffset + halves.remoteSize);
    this.remoteSize = halves.remoteSize;
    this.#localI32 = new Int32Array(b.buffer, b.byteOffset + halves.localOffset, 8);
    // Regions start on page boundaries, so a u32 view over the whole peer region is aligned.
    this.#remoteI32 = new Int32Array(
      b.buffer,
      b.byteOffset + halves.remoteOffset,
      halves.remoteSize >> 2,
    );
    this.#localDoorbell = mapping.pointerAt(halves.localOffset + FABRIC_HEADER.doorbell);
    this.#remoteDoorbell = mapping.pointerAt(halves.remoteOffset + FABRIC_HEADER.doorbell);
    this.readiness = notify ? { source: notify.own, token: notify.ownToken } : undefined;
  }

  get failed(): boolean {
    return this.#failed !== null;
  }

  /** Why the endpoint failed, or null. */
  get failureReason(): string | null {
    return this.#failed;
  }

  #complete(wrId: number, flags: number): number {
    if ((flags & SIGNALED) !== 0) this.#cq.push(wrId, WC_SUCCESS);
    return OK;
  }

  #usable(signaled: boolean): number {
    if (this.#failed !== null || this.#closed) return FAILED;
    if (signaled && this.#cq.length >= CQ_DEPTH) return FULL;
    return OK;
  }

  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number {
    const st = this.#usable((flags & SIGNALED) !== 0);
    if (st !== OK) return st;
    if (remoteOff < 0 || remoteOff + src.length > this.remoteSize) return FAILED;
    if (this.#failNextWrite) return this.#refuseWrite();
    this.#remote.set(src, remoteOff);
    return this.#complete(wrId, flags);
  }

  writeSg(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    count: number,
    flags: number,
  ): number {
    const st = this.#usable((flags & SIGNALED) !== 0);
    if (st !== OK) return st;
    let total = 0;
    for (let i = 0; i < count; i++) total += sg[i].length;
    if (remoteOff < 0 || remoteOff + total > this.remoteSize) return FAILED;
    if (this.#failNextWrite) return this.#refuseWrite();
    let off = remoteOff;
    for (let i = 0; i < count; i++) {
      this.#remote.set(sg[i], off);
      off += sg[i].length;
    }
    return this.#complete(wrId, flags);
  }

  #refuseWrite(): number {
    this.#failNextWrite = false;
    return FAILED;
  }

  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number {
    const st = this.#usable((flags & SIGNALED) !== 0);
    if (st !== OK) return st;
    if (remoteOff < 0 || remoteOff + 4 > this.remoteSize || (remoteOff & 3) !== 0) return FAILED;
    // A release store: every earlier copy is visible before the word (transport/word_order.ts).
    storeRelease(this.#remoteI32, remoteOff >> 2, value | 0);
    return this.#complete(wrId, flags);
  }

  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number {
    const st = this.#usable((flags & SIGNALED) !== 0);
    if (st !== OK) return st;
    if (remoteOff < 0 || remoteOff + dst.length > this.remoteSize) return FAILED;
    dst.set(this.#remote.subarray(remoteOff, remoteOff + dst.length));
    return this.#complete(wrId, flags);
  }

  flush(): void {}

  poll(out: Completions): number {
    return this.#cq.drainInto(out);
  }

  statusText(status: number): string {
    return status === WC_SUCCESS ? "success" : `shm status ${status}`;
  }

  doorbell(): number {
    return this.#closed ? 0 : loadAcquire(this.#localI32, FABRIC_HEADER.doorbell >> 2);
  }

  kick(): void {
    if (this.#closed || this.#failed !== null) return;
    const words = this.#remoteI32, notify = this.notify;
    // The session's doorbell moves first: a peer that collects the announcement must find it moved.
    if (notify) {
      // We are the word's one writer and the peer sleeps on its notify page, not on this word: a
      // plain store (a locked add would stall until this core owns the peer's line), published
      // by the announcement's atomic add.
      words[FABRIC_HEADER.doorbell >> 2] = (words[FABRIC_HEADER.doorbell >> 2] + 1) | 0;
      notify.peer.announce(notify.peerToken);
      return;
    }
    Atomics.add(words, FABRIC_HEADER.doorbell >> 2, 1);
    if (Atomics.load(words, FABRIC_HEADER.sleeping >> 2) !== 0) {
      this.helper.lib.symbols.vb_futex_wake(this.#remoteDoorbell, 1);
    }
  }

  peerSleeping(): boolean {
    if (this.#closed) return false;
    // With notify pages the peer sleeps on its process's page, else on this session's doorbell.
    return this.notify
      ? this.notify.peer.sleeping
      : Atomics.load(this.#remoteI32, FABRIC_HEADER.sleeping >> 2) !== 0;
  }

  async waitInbound(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#closed) return false;
    const words = this.#localI32;
    // Several waits may be in flight (a loop woken by a new call leaves its wait running and
    // may start another): the flag stays set until the last of them returns, or a kick could
    // skip the wake that the remaining sleeper needs.
    this.#waiters++;
    Atomics.store(words, FABRIC_HEADER.sleeping >> 2, 1);
    try {
      if (Atomics.load(words, FABRIC_HEADER.doorbell >> 2) !== seen) return true;
      const rc = await this.helper.lib.nonblocking.vb_futex_wait(
        this.#localDoorbell,
        seen >>> 0,
        timeoutMs,
      );
      return rc === 0 || rc === 1;
    } finally {
      if (--this.#waiters === 0 && !this.#closed) {
        Atomics.store(words, FABRIC_HEADER.sleeping >> 2, 0);
      }
    }
  }

  fail(reason: string): void {
    this.#failed ??= reason;
  }

  close(): void {
    if (this.#closed) return;
    // Wake a sleeping waiter of ours before the memory goes away.
    this.helper.lib.symbols.vb_futex_wake(this.#localDoorbell, 0x7fffffff);
    this.#closed = true;
    this.#failed ??= "closed";
    if (this.notify) {
      this.notify.own.release(this.notify.ownToken);
      this.notify.peer.release();
    }
    this.mapping.unlink();
    this.mapping.close();
  }
}
