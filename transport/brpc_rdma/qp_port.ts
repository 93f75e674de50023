/**
 * What brpc's RDMA mode needs of an RDMA device, as an interface: the verbs fabric implements it
 * (`transport/verbs/brpc_qp.ts`, loaded lazily, so a host without RDMA never loads verbs code),
 * and host tests implement it in memory. The handshake (`handshake.ts`) and the stream
 * connection (`stream_conn.ts`) see only this.
 *
 * Buffer ownership: the send region and the receive blocks are registered memory owned by the
 * QP. The connection writes the send region (its output ring, `send_ring.ts`) and must not touch
 * the bytes of a posted send until its completion; a view handed to
 * {@link BrpcCompletionSink.onRecv} is valid only during that call (its block is reposted after
 * it).
 *
 * Two ways completions arrive: a QP of its own (`readiness` unset: {@link BrpcQp.poll},
 * {@link BrpcQp.arm}, {@link BrpcQp.wait}), or a QP on a shared completion queue (`readiness` set:
 * the verbs hub's one CQ for the process): then {@link BrpcQp.attach} names the sink, whoever
 * drains the shared CQ hands it this QP's completions, and the token is announced on the source
 * so that the process's progress engine gives the connection a turn.
 *
 * Threading: one JS thread; only {@link BrpcQp.wait} blocks, off-thread.
 * @module
 */
import type { ReadinessToken } from "../readiness.ts";
import type { NetAddress } from "../tcp/tcp.ts";
import type { BrpcHello } from "./hello.ts";
import type { BrpcRdmaOptions } from "./options.ts";

/** Send flags (the values of IBV_SEND_SIGNALED / IBV_SEND_SOLICITED). */
export const SEND_SIGNALED = 2, SEND_SOLICITED = 4;

/** Receives the completions one {@link BrpcQp.poll} reaps, in order. */
export interface BrpcCompletionSink {
  /** A signalled send completed (`status` 0) or failed. */
  onSend(wrId: number, status: number): void;
  /**
   * A receive completed: `len` bytes of `block` (valid during the call only), `imm` the credits
   * it returns (host order, 0 when none). `status` not 0: it failed (the QP is in error).
   */
  onRecv(block: Uint8Array, len: number, imm: number, status: number): void;
}

/** One connection's queue pair, its CQ and its registered blocks. */
export interface BrpcQp {
  /** The device it is on (for messages). */
  readonly deviceName: string;
  /** What this side announces in its hello. */
  readonly lid: number;
  readonly gid: Uint8Array;
  readonly qpNum: number;
  readonly sqSize: number;
  readonly rqSize: number;
  /** The size of each posted receive block. */
  readonly blockSize: number;
  /**
   * RESET → INIT, posts `rqSize` receive blocks, → RTR (the peer's GID, LID and QP number, PSN
   * 0) → RTS, and sets up a registered send region of (at least) `sendBytes` bytes. Throws on
   * any failure.
   */
  bringUp(remote: BrpcHello, sendBytes: number): void;
  /** The registered send region (after {@link bringUp}): fill bytes, then {@link stageSend}. */
  readonly sendRegion: Uint8Array;
  /**
   * Adds a SEND_WITH_IMM of the `len` bytes at `offset` of {@link sendRegion} (`len` 0: no data,
   * a standalone ACK). The NIC may read them until the send's completion (or the completion of a
   * later signalled send).
   */
  stageSend(offset: number, len: number, imm: number, flags: number, wrId: number): void;
  /** Posts every staged send with one doorbell. 0, or the errno of `ibv_post_send`. */
  postStaged(): number;
  /**
   * Set when the completions come through a shared readiness source (see the module doc): its
   * source and this QP's token there.
   */
  readonly readiness?: ReadinessToken;
  /**
   * Shared CQ only: true when the connection is to be driven by the process's progress engine
   * (spin-then-sleep), false when it runs its own event loop on the shared CQ ({@link poll},
   * {@link wait}: no spin). Unset: the engine (when a driver is set).
   */
  readonly polling?: boolean;
  /**
   * Shared CQ only: this QP's completions go to `sink` from now on (during whoever's drain);
   * `announce`: its token is announced on {@link readiness} after each (a progress engine drives
   * the connection), else not (the connection runs its own loop on {@link poll}/{@link wait}).
   */
  attach?(sink: BrpcCompletionSink, announce: boolean): void;
  /**
   * Posts the receive blocks that completions freed and that are not reposted yet (one doorbell).
   * Call before returning their credits. 0, or the errno of `ibv_post_recv`.
   */
  flushReceives?(): number;
  /** Reaps completions into `sink` (each receive is reposted after its call). Count, or -errno. */
  poll(sink: BrpcCompletionSink): number;
  /** Asks for an event on the next completion (`ibv_req_notify_cq`). */
  arm(): void;
  /** Sleeps off-thread until a completion event or `timeoutMs`. */
  wait(timeoutMs: number): Promise<boolean>;
  /** Human text of a completion status. */
  statusText(status: number): string;
  /** Destroys the QP, CQ, channel and MRs. Safe twice; never while a wait is pending. */
  close(): void;
}

/** Opens a {@link BrpcQp} (C_ALLOC_QPCQ / S_ALLOC_QPCQ). Throws when this host cannot. */
export type BrpcQpFactory = (
  options: BrpcRdmaOptions,
  local: NetAddress,
) => Promise<BrpcQp>;
