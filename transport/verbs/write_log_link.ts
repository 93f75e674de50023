/**
 * Data path of the verbs fabric's write log (the format and its checks: transport/write_log.ts):
 * how one endpoint's small writes become one RDMA WRITE_WITH_IMM per flush, and how the peer's
 * batches are applied and acknowledged.
 * ```
 *  my region MR:   [0, S) rpc region │ [S, S+L) inbound log │ S+L: ack word (written by the peer)
 *  my outbox MR:   [0, L) the batches I post, at the offsets they take in the peer's log
 *  flush:   open batch ──seal──▶ WRITE_WITH_IMM outbox[at, +n) → peer log[at], imm = peer's token
 *  peer:    receive completion ─▶ apply records into its rpc region ─▶ doorbell += 1
 *           every L/4 applied  ─▶ RDMA WRITE of its applied count into my ack word
 * ```
 * The batch's WRITE_WITH_IMM is also the kick: it consumes one of the peer's receives, so the
 * peer's hub learns the session has work exactly as before; a kick with nothing logged is an
 * empty batch. Writes larger than {@link LOG_RECORD_MAX} bytes stay direct RDMA WRITEs, posted
 * ahead of the batch that follows them (RC keeps their order, so a direct body is in place
 * before the logged state word that publishes it is applied).
 *
 * Nothing allocates per write. One JS thread (the endpoint's).
 * @module
 */
import { RESERVED_WR_ID } from "../fabric.ts";
import { RING_FULL } from "../rdma_send_ring.ts";
import { LOG_SEAL_FIRST, LogReader, LogWriter } from "../write_log.ts";
import type { VerbsSendPath } from "./send_path.ts";
import type { EndpointResources } from "./verbs_resources.ts";

/** Largest write that goes through the log (larger ones are their own RDMA WRITE). */
export const LOG_RECORD_MAX = 256;
/** Most bytes of one batch: small enough that a wrap wastes little of the log. */
const MAX_BATCH = 64 << 10;
/** `reserve()`: no room in the log (or for its post) now. */
export const LOG_NO_ROOM = -1;

/** One endpoint's two write logs: the one it writes into the peer, the one the peer writes into it. */
export class VerbsWriteLog {
  readonly #send: VerbsSendPath;
  readonly #writer: LogWriter;
  readonly #reader: LogReader;
  /** The outbox, as a DataView for unaligned u32 stores. */
  readonly outboxView: DataView;
  readonly #logRemote: number;
  readonly #ackRemote: number;
  readonly #peerToken: number;
  #ackOwed = false;

  /** `remoteSize`: the peer's rpc region (its log follows it); `peerToken`: every batch's immediate. */
  constructor(send: VerbsSendPath, res: EndpointResources, remoteSize: number, peerToken: number) {
    const bytes = res.shape.logBytes, whole = res.region.buffer, size = res.shape.regionSize;
    const words = new Int32Array(whole.buffer, whole.byteOffset, whole.length >> 2);
    this.#send = send;
    this.#writer = new LogWriter(
      res.outbox!.buffer,
      Math.min(MAX_BATCH, bytes / 4),
      words,
      (size + bytes) >> 2,
    );
    this.#reader = new LogReader(whole, size, bytes);
    this.outboxView = new DataView(res.outbox!.buffer.buffer, res.outbox!.buffer.byteOffset, bytes);
    this.#logRemote = remoteSize;
    this.#ackRemote = remoteSize + bytes;
    this.#peerToken = peerToken;
  }

  /** The outbox bytes (copy a reserved record's bytes here). */
  get outbox(): Uint8Array {
    return this.#writer.outbox;
  }

  /** Records waiting in the open batch. */
  get pending(): number {
    return this.#writer.pending;
  }

  /** An acknowledgement is owed to the peer (post it with the next flush). */
  get ackOwed(): boolean {
    return this.#ackOwed;
  }

  /** Bytes of mine the peer has not acknowledged yet (tests, stats). */
  get unacked(): number {
    return this.#writer.unacked;
  }

  /**
   * Room for `len` (≤ {@link LOG_RECORD_MAX}) bytes to the peer's rpc region at `remoteOff`: the
   * outbox offset to copy them to, or {@link LOG_NO_ROOM} (the peer has not applied enough yet,
   * or the send queue is full).
   */
  reserve(remoteOff: number, len: number): number {
    let at = this.#writer.reserve(remoteOff, len);
    if (at === LOG_SEAL_FIRST) {
      if (!this.post(false)) return LOG_NO_ROOM;
      at = this.#writer.reserve(remoteOff, len);
    }
    return at >= 0 ? at : LOG_NO_ROOM;
  }

  /**
   * Encodes what is owed: the acknowledgement, then the open batch (an empty one when `kick`).
   * The endpoint's ring posts them. False when the send queue had no room for the batch (it
   * stays open and goes with the next flush).
   */
  post(kick: boolean): boolean {
    const ring = this.#send.ring;
    if (this.#ackOwed) {
      const at = ring.reserve(4, false);
      if (at !== RING_FULL) {
        this.#send.bounce32[at >> 2] = this.#reader.applied;
        this.#send.writeBounced(at, 4, this.#ackRemote, RESERVED_WR_ID.internal, false);
        this.#reader.ackedUpTo = this.#reader.applied;
        this.#ackOwed = false;
      }
    }
    const w = this.#writer;
    if (w.pending === 0 && !kick) return true;
    if (ring.reserve(0, false) === RING_FULL) return false;
    const n = w.seal(kick);
    if (n > 0) {
      this.#send.writeLogBatch(
        w.sealedAt,
        n,
        this.#logRemote + w.sealedAt,
        this.#peerToken,
        RESERVED_WR_ID.internal,
      );
    }
    return true;
  }

  /**
   * Applies the peer's next batch (call once per successful receive completion). Returns null,
   * or what is wrong with the batch (the endpoint must fail).
   */
  apply(): string | null {
    const r = this.#reader.applyNext();
    if (typeof r === "string") return r;
    if (this.#reader.ackDue) this.#ackOwed = true;
    return null;
  }
}
