/**
 * The verbs fabric's {@link FabricEndpoint}: one connected RC QP (resources in
 * verbs_resources.ts, born connected by handshake.ts). Data path: nothing allocates.
 *
 * - With a write log (the default; write_log_link.ts): `write`, `writeU32` and `writeSg` of at
 *   most {@link LOG_RECORD_MAX} bytes are records of the open batch, and a flush posts the batch
 *   as ONE RDMA WRITE_WITH_IMM that the peer applies in order (state-last publication holds);
 *   larger writes are direct, as below, and go ahead of the batch that follows them.
 * - Direct: `write(src)` copies `src` into the registered bounce ring (sent INLINE when it fits
 *   the QP's `max_inline_data`); `writeSg` is one multi-SGE RDMA WRITE straight from `local`;
 *   `writeU32` a separate small inline WRITE; `read` an RDMA READ into `local`. Accounting is the
 *   shared {@link RdmaSendRing}; encoding is send_path.ts.
 * - `flush()` and `kick()` ring one doorbell at the end of the current job (a microtask), so the
 *   calls submitted in one job — a window of pipelined calls resolved together — share one
 *   `ibv_post_send` and one kick. `poll()`, `waitInbound()` and `close()` ring it at once.
 * - `kick()` posts the open batch (an empty one if need be) — without a log, writes the next
 *   value of a counter into the peer's doorbell word — as an RDMA WRITE_WITH_IMM whose
 *   immediate is the peer endpoint's token in its process's hub: the
 *   peer's one CQ poll names this session (its readiness source, hub.ts), whatever the number
 *   of sessions, and its one completion channel fires when it sleeps.
 * - Completions arrive through the process's hub (one CQ for every QP); the receive queue and
 *   waiting are inbound.ts.
 * - A failed post or an error completion fails the endpoint, naming `ibv_wc_status_str`, the
 *   opcode and the peer.
 * @module
 */
import { FABRIC_HEADER } from "../control_page.ts";
import {
  type Completions,
  type FabricEndpoint,
  FAILED,
  FULL,
  OK,
  RESERVED_WR_ID,
  SIGNALED,
} from "../fabric.ts";
import type { FabricFaults } from "../faults.ts";
import type { ReadinessToken } from "../readiness.ts";
import { type RdmaSendRing, RING_FULL } from "../rdma_send_ring.ts";
import type { CmConnection } from "./cm.ts";
import { wcStatusStr } from "./cq.ts";
import { VerbsInbound } from "./inbound.ts";
import type { VerbsSendPath } from "./send_path.ts";
import { ResourcePool } from "./resource_pool.ts";
import { LOG_RECORD_MAX, VerbsWriteLog } from "./write_log_link.ts";
import { VerbsFaults } from "./verbs_faults.ts";
import type { VerbsLib } from "./verbs_lib.ts";
import { type EndpointResources, regionExtent } from "./verbs_resources.ts";

/** How long close() lets posted work reach the peer before the QP is flushed. */
const LINGER_MS = 300;

/** What the handshake hands a new endpoint (all owned by the endpoint from then on). */
export interface VerbsEndpointParts {
  readonly lib: VerbsLib;
  readonly resources: EndpointResources;
  /** The send side, already used by the handshake's proof read. */
  readonly send: VerbsSendPath;
  /** The ESTABLISHED rdma_cm connection. */
  readonly connection: CmConnection;
  /** Bytes of the peer's region. */
  readonly remoteSize: number;
  /** The peer endpoint's token in its process's hub (the immediate of every kick). */
  readonly peerToken: number;
  /** Printable peer name for errors ("10.77.0.2:7001"). */
  readonly peerName: string;
}

/** The verbs endpoint of one session side. Single JS thread. */
export class VerbsEndpoint implements FabricEndpoint {
  readonly kind = "verbs" as const;
  readonly simulated = false;
  readonly local: Uint8Array;
  readonly remoteSize: number;
  /** Printable peer name. */
  readonly peer: string;
  /** The faults port (tests and demos). */
  readonly faults: FabricFaults;
  /** Where the peer announces work for this endpoint: the process's hub and my token in it. */
  readonly readiness: ReadinessToken;
  readonly #lib: VerbsLib;
  readonly #res: EndpointResources;
  readonly #send: VerbsSendPath;
  readonly #ring: RdmaSendRing;
  readonly #inbound: VerbsInbound;
  readonly #conn: CmConnection;
  readonly #maxSge: number;
  readonly #peerToken: number;
  /** The write log, or null when the session has none (`logBytes` 0). */
  readonly #log: VerbsWriteLog | null;
  readonly #flushTask = () => {
    this.#flushQueued = false;
    this.flushNow();
  };
  #flushQueued = false;
  #kickWanted = false;
  #kicks = 0;
  #closed = false;
  #teardown: Promise<void> | null = null;

  /** @internal built by handshake.ts once the peer is connected and proven. */
  constructor(parts: VerbsEndpointParts) {
    this.#lib = parts.lib;
    this.#res = parts.resources;
    this.#send = parts.send;
    this.#ring = parts.send.ring;
    this.#conn = parts.connection;
    this.local = parts.resources.local;
    this.remoteSize = parts.remoteSize;
    this.peer = parts.peerName;
    this.#maxSge = parts.resources.shape.maxSge;
    this.#peerToken = parts.peerToken;
    const logBytes = parts.resources.shape.logBytes;
    this.#log = logBytes > 0
      ? new VerbsWriteLog(parts.send, parts.resources, this.remoteSize, this.#peerToken)
      : null;
    const extent = regionExtent(this.remoteSize, logBytes); // the peer's MR, log included
    this.faults = new VerbsFaults(parts.send, extent, (why) => this.fail(why));
    this.readiness = { source: parts.resources.hub, token: parts.resources.token };
    const inbound = new VerbsInbound(
      parts.lib,
      parts.resources,
      parts.send,
      this,
      this.peer,
      this.#log,
    );
    this.#inbound = inbound;
    const send = parts.send;
    parts.resources.attach({
      onSend: (wc, k) => send.onSend(wc, k),
      onReceive: (status) => inbound.onReceive(status),
    });
    this.#conn.onDown = (why) => this.fail(`RDMA connection to ${this.peer} went down: ${why}`);
  }

  get failed(): boolean {
    return this.#send.failure !== null;
  }

  /** Why the endpoint failed, or null. */
  get failureReason(): string | null {
    return this.#send.failure;
  }

  /** True once close() ran. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The native resources (owned by this endpoint). */
  get resources(): EndpointResources {
    return this.#res;
  }

  /** The QP's granted capabilities (max inline data, ...). */
  get qpCap(): EndpointResources["qp"]["cap"] {
    return this.#res.qp.cap;
  }

  /** Kicks received from the peer (tests, stats). */
  get kicksReceived(): number {
    return this.#inbound.received;
  }

  /** Send-side counters (tests, stats). */
  get counters(): RdmaSendRing["counters"] {
    return this.#ring.counters;
  }

  /** Resolves once close() released every native resource. */
  get released(): Promise<void> {
    return this.#teardown ?? Promise.resolve();
  }

  #inRemote(off: number, len: number): boolean {
    return off >= 0 && len >= 0 && off + len <= this.remoteSize;
  }

  /** Offset of `v` in `local`, or -1 when it is not a view of it. */
  #localOffset(v: Uint8Array): number {
    if (v.buffer !== this.local.buffer) return -1;
    const off = v.byteOffset - this.local.byteOffset;
    return off >= 0 && off + v.length <= this.local.length ? off : -1;
  }

  /** FULL while the endpoint works, FAILED once it does not. */
  #noRoom(): number {
    return this.#send.usable ? FULL : FAILED;
  }

  write(wrId: number, remoteOff: number, src: Uint8Array, flags: number): number {
    if (!this.#send.usable) return FAILED;
    const len = src.length, report = (flags & SIGNALED) !== 0;
    if (!this.#inRemote(remoteOff, len) || len > this.#ring.maxBounce) return FAILED;
    if (this.#log !== null && len <= LOG_RECORD_MAX && !report) {
      const to = this.#log.reserve(remoteOff, len);
      if (to < 0) return this.#noRoom();
      this.#log.outbox.set(src, to);
      return OK;
    }
    const at = this.#ring.reserve(len, report);
    if (at === RING_FULL) return this.#noRoom();
    this.#send.bounce.set(src, at);
    this.#send.writeBounced(at, len, remoteOff, wrId, report);
    return OK;
  }

  writeSg(
    wrId: number,
    remoteOff: number,
    sg: readonly Uint8Array[],
    count: number,
    flags: number,
  ): number {
    if (!this.#send.usable) return FAILED;
    let total = 0, direct = count <= this.#maxSge;
    for (let i = 0; i < count; i++) {
      total += sg[i].length;
      if (direct && sg[i].length > 0 && this.#localOffset(sg[i]) < 0) direct = false;
    }
    if (!this.#inRemote(remoteOff, total)) return FAILED;
    const report = (flags & SIGNALED) !== 0;
    if (this.#log !== null && total <= LOG_RECORD_MAX && !report) { // contiguous: one record
      for (let i = 0, o = remoteOff; i < count; o += sg[i].length, i++) {
        if (sg[i].length === 0) continue;
        const to = this.#log.reserve(o, sg[i].length);
        if (to < 0) return this.#noRoom();
        this.#log.outbox.set(sg[i], to);
      }
      return OK;
    }
    if (direct) { // straight from the registered region: one WR, one SGE per view
      if (this.#ring.reserve(0, report) === RING_FULL) return this.#noRoom();
      this.#send.beginGather();
      for (let i = 0; i < count; i++) {
        if (sg[i].length > 0) this.#send.gather(this.#localOffset(sg[i]), sg[i].length);
      }
      this.#send.endGather(total, remoteOff, wrId, report);
      return OK;
    }
    if (total > this.#ring.maxBounce) return FAILED;
    const at = this.#ring.reserve(total, report); // views from elsewhere: through the bounce ring
    if (at === RING_FULL) return this.#noRoom();
    for (let i = 0, o = at; i < count; o += sg[i].length, i++) this.#send.bounce.set(sg[i], o);
    this.#send.writeBounced(at, total, remoteOff, wrId, report);
    return OK;
  }

  writeU32(wrId: number, remoteOff: number, value: number, flags: number): number {
    if (!this.#send.usable) return FAILED;
    if (!this.#inRemote(remoteOff, 4) || (remoteOff & 3) !== 0) return FAILED;
    const report = (flags & SIGNALED) !== 0;
    if (this.#log !== null && !report) {
      const to = this.#log.reserve(remoteOff, 4);
      if (to < 0) return this.#noRoom();
      this.#log.outboxView.setUint32(to, value, true);
      return OK;
    }
    const at = this.#ring.reserve(4, report);
    if (at === RING_FULL) return this.#noRoom();
    this.#send.bounce32[at >> 2] = value;
    this.#send.writeBounced(at, 4, remoteOff, wrId, report);
    return OK;
  }

  read(wrId: number, dst: Uint8Array, remoteOff: number, flags: number): number {
    if (!this.#send.usable) return FAILED;
    const off = this.#localOffset(dst);
    if (off < 0 || !this.#inRemote(remoteOff, dst.length)) return FAILED;
    const report = (flags & SIGNALED) !== 0;
    if (this.#ring.reserve(0, report) === RING_FULL) return this.#noRoom();
    this.#send.readIntoRegion(off, dst.length, remoteOff, wrId, report);
    return OK;
  }

  flush(): void {
    if (this.#flushQueued) return;
    const log = this.#log;
    if (
      this.#send.batched === 0 && !this.#kickWanted &&
      (log === null || (log.pending === 0 && !log.ackOwed))
    ) return;
    this.#flushQueued = true;
    queueMicrotask(this.#flushTask);
  }

  kick(): void {
    if (!this.#send.usable) return;
    this.#kickWanted = true;
    this.flush();
  }

  /** @internal Appends the open log batch and the pending kick, and posts. */
  flushNow(): void {
    if (!this.#send.usable) return;
    if (this.#log !== null) {
      if (this.#log.post(this.#kickWanted)) this.#kickWanted = false;
    } else if (this.#kickWanted) {
      this.#kickWanted = false;
      const at = this.#ring.reserve(4, false);
      if (at !== RING_FULL) { // no room: the peer still finds the work on its next poll
        this.#kicks = (this.#kicks + 1) >>> 0;
        this.#send.bounce32[at >> 2] = this.#kicks;
        this.#send.writeDoorbell(
          at,
          FABRIC_HEADER.doorbell,
          this.#peerToken,
          RESERVED_WR_ID.internal,
        );
      }
    }
    this.#ring.post();
  }

  /**
   * Reaps when a signaled WR of this QP is outstanding. Error completions of unsignaled WRs
   * need no timer here: the process's readiness source drains the shared CQ every engine turn.
   */
  #maybeReap(): void {
    if (this.#ring.awaitingSignal) this.#ring.reap();
  }

  poll(out: Completions): number {
    if (this.#closed) return 0;
    this.flushNow();
    this.#maybeReap();
    return this.#ring.drainInto(out);
  }

  statusText(status: number): string {
    return status === 0 ? "success" : wcStatusStr(this.#lib, status);
  }

  /** My doorbell word; with a write log, after the hub applied what arrived (a drain). */
  doorbell(): number {
    if (this.#closed) return 0;
    if (this.#log !== null) this.#res.hub.drain();
    return this.#inbound.doorbell();
  }

  waitInbound(seen: number, timeoutMs: number): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return this.#inbound.wait(seen, timeoutMs);
  }

  /**
   * Fails the endpoint. `flushed`: the reason is a flushed work request — a consequence of a QP
   * that already went to error — so a later completion with the real cause replaces it.
   */
  fail(reason: string, flushed = false): void {
    this.#send.fail(reason, flushed);
  }

  close(): void {
    if (this.#closed) return;
    this.flushNow(); // what was published and kicked in this job still goes (a SESSION_CLOSED word)
    this.#closed = true;
    const healthy = this.#send.usable;
    this.#send.markClosed();
    this.#teardown = this.#release(healthy);
  }

  async #release(healthy: boolean): Promise<void> {
    const ring = this.#ring;
    // Linger so work already posted reaches the peer before the QP is flushed: end with a
    // signaled zero-length marker and wait for its completion.
    if (healthy && ring.outstanding && ring.reserve(0, false) !== RING_FULL) {
      const last = ring.nextSeq;
      this.#send.writeMarker(RESERVED_WR_ID.internal);
      ring.post();
      const end = performance.now() + LINGER_MS;
      while (!ring.completed(last) && this.failureReason === "closed" && performance.now() < end) {
        if (ring.reap() === 0) await new Promise((r) => setTimeout(r, 1));
      }
    }
    this.#conn.disconnect();
    try {
      this.#res.qp.toError(); // flushes the receives and what is still queued
    } catch { /* already in error */ }
    this.#res.hub.drain(); // hand over what completed so far (the pool's renewal detaches the QP)
    this.#send.released = true;
    try {
      ResourcePool.of(this.#res.hub).give(this.#res); // QP destroyed, PD and MRs kept for the next
    } finally {
      this.#conn.close();
    }
  }
}
