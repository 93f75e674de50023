/**
 * The options of brpc's RDMA mode (one zod schema: types, defaults and error messages). Names
 * follow brpc's gflags where one exists (`-rdma_device`, `-rdma_port`, `-rdma_gid_index`,
 * `-rdma_sq_size`, `-rdma_rq_size`). Pure; any thread.
 * @module
 */
import { z } from "zod";

/** Options of the brpc RDMA mode, on either side. */
export const brpcRdmaOptionsSchema: z.ZodObject<{
  device: z.ZodOptional<z.ZodString>;
  port: z.ZodDefault<z.ZodNumber>;
  gidIndex: z.ZodDefault<z.ZodNumber>;
  sqSize: z.ZodDefault<z.ZodNumber>;
  rqSize: z.ZodDefault<z.ZodNumber>;
  blockSize: z.ZodDefault<z.ZodNumber>;
  handshakeTimeoutMs: z.ZodDefault<z.ZodNumber>;
  preparedQps: z.ZodDefault<z.ZodNumber>;
  usePolling: z.ZodDefault<z.ZodUnion<readonly [z.ZodBoolean, z.ZodLiteral<"auto">]>>;
}, z.core.$strict> = z.object({
  /**
   * RDMA device (brpc `-rdma_device`). Default: the device that has the TCP connection's local
   * IPv4 address in its GID table, else the first one.
   */
  device: z.string().min(1).optional(),
  /** Port of the device (brpc `-rdma_port`). */
  port: z.number().int().min(1).max(255).default(1),
  /**
   * GID index (brpc `-rdma_gid_index`); -1: the GID of the connection's local IPv4 address if
   * the device has it, else brpc's choice (the last GID with a non-zero interface id).
   */
  gidIndex: z.number().int().min(-1).max(255).default(-1),
  /** Send queue size announced and created (brpc `-rdma_sq_size`, 16..4096). */
  sqSize: z.number().int().min(16).max(4096).default(128),
  /** Receive queue size announced and created (brpc `-rdma_rq_size`, 16..4096). */
  rqSize: z.number().int().min(16).max(4096).default(128),
  /**
   * Bytes of each receive block announced as `block_size` (brpc's default: 8 KiB minus its
   * 32-byte IOBuf block header = 8160).
   */
  blockSize: z.number().int().min(1024).max(2 * 1024 * 1024).default(8160),
  /** The whole handshake must finish within this many ms, else the connection FAILED. */
  handshakeTimeoutMs: z.number().int().positive().max(600_000).default(5000),
  /**
   * QPs kept prepared (created, registered, on the shared CQ) for the next handshakes, refilled
   * in the background after each (brpc `-rdma_prepared_qp_cnt`); 0: each handshake creates its
   * own. Each holds about (rqSize + sqSize) × blockSize bytes of registered memory.
   */
  preparedQps: z.number().int().min(0).max(1024).default(4),
  /**
   * How completions are waited for (brpc `-rdma_use_polling`). `true`: the process's progress
   * engine drives the connection (spin-then-sleep on the verbs hub's shared CQ). `false`: event
   * mode — the connection polls the shared CQ until it is empty, then sleeps on its completion
   * channel (no spin). `"auto"` (default): polling on a hardware device, event mode on a software
   * one (Soft-RoCE, siw), whose "NIC" is this host's CPUs: a spin there only takes CPU from the
   * kernel work it waits for (measured in the Soft-RoCE VM: ~1,000 empty CQ polls per batch of 32
   * calls on each side, against ~3 in event mode).
   */
  usePolling: z.union([z.boolean(), z.literal("auto")]).default("auto"),
}).strict();

/** Parsed options (defaults filled). */
export type BrpcRdmaOptions = z.output<typeof brpcRdmaOptionsSchema>;
/** Options as a caller writes them. */
export type BrpcRdmaOptionsInput = z.input<typeof brpcRdmaOptionsSchema>;

/** Largest bytes one send slot holds: a peer announcing a bigger block gets sends of this size. */
export const MAX_SEND_SLOT = 64 * 1024;
