/**
 * Data path of the URMA fabric: a connected {@link FabricEndpoint} over one jetty, built by
 * handshake.ts once the peer's segment and jetty are imported and its stamp checked. This file
 * checks every caller-supplied offset and view and delegates to the endpoint's parts:
 * - send_side.ts: encoding, posting and completions of its work requests (the accounting —
 *   credits, bounce ring, signaling, caller completions — is transport/rdma_send_ring.ts);
 * - completion_sink.ts: what the hub (the process's shared JFC) hands this endpoint;
 * - receive_credits.ts: posted receives (the peer's notification credits) and their publication;
 * - wake_up.ts: doorbell, kicks (WRITE_IMM naming the peer's token) and credit publication;
 * - endpoint_faults.ts: the faults port.
 * Nothing here allocates per message. Buffers: `local` (the region) and the aux area belong to
 * the endpoint until `close()`.
 * Readiness: the hub is the process's URMA readiness source; this endpoint's token in it is what
 * the peer's kicks name, so the engine polls it only when announced.
 * Threading: one JS thread; `waitInbound` sleeps in the hub's one wait (off-thread).
 * @module
 */
import { FABRIC_HEADER } from "../control_page.ts";
import { type Completions, type FabricEndpoint, FAILED, SIGNALED } from "../fabric.ts";
import type { FabricFaults } from "../faults.ts";
import type { ReadinessToken } from "../readiness.ts";
import { EndpointCompletions } from "./completion_sink.ts";
import type { UrmaEndpointParts } from "./endpoint_parts.ts";
import { UrmaFaults } from "./endpoint_faults.ts";
import { URMA_WR_FLAG } from "./data_path.ts";
import { crStatusName } from "./errors.ts";
import type { EndpointHealth } from "./health.ts";
import type { UrmaHub } from "./hub.ts";
import { UrmaSendSide } from "./send_side.ts";
import { UrmaWakeUp } from "./wake_up.ts";
import { UrmaAsyncEvents } from "./async_events.ts";
import { CrReader } from "./data_path.ts";
import { flushJetty, modifyJettyState } from "./jetty_state.ts";
import type { URMA_EVENT_TYPES } from "../../ffi/layouts/urma_events.ts";

/** A connected URMA fabric endpoint. Built by handshake.ts; owns its jetty, segments and imports. */
export class UrmaEndpoint implements FabricEndpoint {
  readonly kind = "urma" as const;
  readonly simulated: boolean;
  readonly local: Uint8Array;
  readonly remoteSize: number;
  readonly faults: FabricFaults;
  readonly readiness: ReadinessToken;
  readonly #faults: UrmaFaults;
  readonly #parts: UrmaEndpointParts;
  readonly #hub: UrmaHub;
  readonly #health: EndpointHealth;
  readonly #sendSide: UrmaSendSide;
  readonly #wakeUp: UrmaWakeUp;
  /** The buffer `local` views: a caller's view must be of it. */
  readonly #memBuffer: ArrayBufferLike;
  /** My doorbell word (the peer's kicks move it). */
  readonly #doorbellWord: Int32Array;
  /** Stops the context's async-event reader from watching my jetty. */
  readonly #unwatch: (() => void) | null;
  /** WR_FLUSH_ERR records collected by the flush after an async error (-1: none flushed). */
  flushedOnError = -1;

  /** @internal built by handshake.ts over a connected side. */
  constructor(parts: UrmaEndpointParts) {
    this.#parts = parts;
    this.#hub = parts.hub;
    this.#health = parts.health;
    this.simulated = parts.lib.simulated;
    this.#memBuffer = parts.mem.buffer;
    this.local = parts.mem.subarray(0, parts.regionSize);
    this.remoteSize = parts.remoteSize;
    this.#doorbellWord = new Int32Array(
      parts.mem.buffer,
      parts.mem.byteOffset + FABRIC_HEADER.doorbell,
      1,
    );
    const hub = parts.hub;
    this.#sendSide = new UrmaSendSide(parts, () => hub.reap());
    this.#wakeUp = new UrmaWakeUp(parts, this.#sendSide);
    parts.binding.sink = new EndpointCompletions(
      parts.health,
      this.#sendSide,
      parts.receives,
      () => this.#wakeUp.afterReap(),
    );
    this.readiness = { source: hub, token: parts.binding.token };
    this.faults = this.#faults = new UrmaFaults(
      (descriptor, token, blob) =>
        parts.resources.own(hub.ctx.importSegment(descriptor, token, blob)),
      this.#sendSide,
      parts.remoteSize,
      (reason) => this.fail(reason),
    );
    const events = UrmaAsyncEvents.of(hub.ctx);
    this.#unwatch = events?.watch(parts.prepared.jetty, (r) => this.#asyncFailure(r)) ?? null;
  }

  /** An async event failed my jetty: fail, move it to ERROR and collect what it flushes. */
  #asyncFailure(reason: string): void {
    this.fail(reason);
    if (this.#health.closed) return;
    const jetty = this.#parts.prepared.jetty;
    try {
      modifyJettyState(jetty, "ERROR");
      this.flushedOnError = flushJetty(jetty, new CrReader(32)).flushErr;
    } catch { /* the failure is recorded; the teardown deletes the jetty */ }
  }

  /** SIMULATOR ONLY (tests): the simulated liburma raises async event `type` on my jetty. @internal */
  simInjectAsyncEvent(type: (typeof URMA_EVENT_TYPES)[number]): void {
    UrmaAsyncEvents.simInject(this.#parts.prepared.jetty, type);
  }

  get failed(): boolean {
    return this.#health.failure !== null;
  }

  /** Why the endpoint failed (a completion status name, a post error, "closed"...), or null. */
  get failureReason(): string | null {
    return this.#health.failure;
  }

  /** Offset of `view` in `local`, or -1 when it is not a view of it. */
  #localOffset(view: Uint8Array): number {
    const offset = view.byteOffset - this.local.byteOffset;
    return view.buffer !== this.#memBuffer || offset < 0 ||
        offset + view.length > this.local.length
      ? -1
      : offset;
  }

  #remoteFits(remoteOff: number, bytes: number): boolean {
    return remoteOff >= 0 && remoteOff + bytes <= this.remoteSize;
  }

  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number {
    if (!this.#remoteFits(remoteOff, src.length)) return FAILED;
    if (this.#faults.failNextWrite) return this.#refuseWrite();
    if (src.length === 0) {
      return this.#health.status() || this.#sendSide.completeAtOnce(wrId, flags);
    }
    return this.#sendSide.writeCopy(wrId, remoteOff, src, (flags & SIGNALED) !== 0);
  }

  writeSg(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    count: number,
    flags: number,
  ): number {
    let total = 0;
    for (let i = 0; i < count; i++) {
      if (this.#localOffset(sg[i]) < 0) return FAILED;
      total += sg[i].length;
    }
    if (!this.#remoteFits(remoteOff, total)) return FAILED;
    if (this.#faults.failNextWrite) return this.#refuseWrite();
    if (total === 0) return this.#health.status() || this.#sendSide.completeAtOnce(wrId, flags);
    const signaled = (flags & SIGNALED) !== 0;
    return this.#sendSide.writeGather(wrId, remoteOff, sg, this.local.byteOffset, count, signaled);
  }

  /** The faults port's `fail-next-write`: refuse this write, unposted. */
  #refuseWrite(): number {
    this.#faults.failNextWrite = false;
    return FAILED;
  }

  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number {
    if (!this.#remoteFits(remoteOff, 4) || (remoteOff & 3) !== 0) return FAILED;
    const signaled = (flags & SIGNALED) !== 0;
    return this.#sendSide.postWord(wrId, remoteOff, value, signaled, URMA_WR_FLAG.FENCE, -1);
  }

  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number {
    const localOffset = this.#localOffset(dst);
    if (localOffset < 0 || !this.#remoteFits(remoteOff, dst.length)) return FAILED;
    if (dst.length === 0) {
      return this.#health.status() || this.#sendSide.completeAtOnce(wrId, flags);
    }
    const signaled = (flags & SIGNALED) !== 0;
    return this.#sendSide.readInto(wrId, localOffset, dst.length, remoteOff, signaled);
  }

  flush(): void {
    this.#sendSide.post();
  }

  poll(out: Completions): number {
    if (!this.#health.closed) this.#wakeUp.reapAndPublish();
    return this.#sendSide.drainCallerCompletions(out);
  }

  statusText(status: number): string {
    return status === 0 ? "success" : crStatusName(status);
  }

  doorbell(): number {
    return this.#health.closed ? 0 : Atomics.load(this.#doorbellWord, 0);
  }

  kick(): void {
    if (!this.#health.closed) this.#wakeUp.kick();
  }

  /**
   * Sleeps (in the hub's one wait, shared by every URMA endpoint of the process) until my
   * doorbell moves past `seen` or `timeoutMs` passes.
   */
  async waitInbound(seen: number, timeoutMs: number): Promise<boolean> {
    const hub = this.#hub, end = performance.now() + timeoutMs;
    for (;;) {
      if (this.#health.closed) return false;
      const bell = hub.doorbell();
      hub.reap();
      if (this.doorbell() !== seen) return true;
      const left = end - performance.now();
      if (left <= 0) return false;
      await hub.wait(bell, Math.ceil(left));
    }
  }

  fail(reason: string): void {
    this.#health.fail(reason);
  }

  /** Gives the jetty, segments and imports back to the hub. Safe twice. */
  close(): void {
    const health = this.#health;
    if (health.closed) return;
    health.closed = true;
    health.fail("closed");
    this.#unwatch?.();
    try {
      this.#parts.resources.release();
    } catch { /* a failing delete leaves nothing we can do */ }
  }
}
