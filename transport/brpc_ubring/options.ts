/**
 * The options of brpc's UBRing mode (one zod schema: types, defaults and error messages). Names
 * follow brpc's gflags where one exists (`--data_queue_size`, `--ub_hb_timer_interval`,
 * `--ub_hb_retry_cnt`). Pure; any thread.
 * @module
 */
import { z } from "zod";
import { ALLOC_UNIT } from "./layout.ts";

/** Options of the brpc UBRing mode, on either side. */
export const brpcUbringOptionsSchema: z.ZodObject<{
  queueMiB: z.ZodDefault<z.ZodNumber>;
  handshakeTimeoutMs: z.ZodDefault<z.ZodNumber>;
  heartbeatMs: z.ZodDefault<z.ZodNumber>;
  heartbeatMisses: z.ZodDefault<z.ZodNumber>;
  spinMs: z.ZodDefault<z.ZodNumber>;
  idlePollMs: z.ZodDefault<z.ZodNumber>;
}, z.core.$strict> = z.object({
  /**
   * MiB of this side's shm object, i.e. of the ring the peer writes into (brpc
   * `--data_queue_size`, default 4): a multiple of 4.
   */
  queueMiB: z.number().int().min(4).max(1024).multipleOf(ALLOC_UNIT / (1024 * 1024)).default(4),
  /** The whole handshake must finish within this many ms, else the connection FAILED. */
  handshakeTimeoutMs: z.number().int().positive().max(600_000).default(5000),
  /** Heartbeat period (brpc `--ub_hb_timer_interval`, 5 s). */
  heartbeatMs: z.number().int().min(10).max(3_600_000).default(5000),
  /** Missed heartbeats in a row that end the connection (brpc `--ub_hb_retry_cnt`, 10). */
  heartbeatMisses: z.number().int().min(1).max(1_000_000).default(10),
  /**
   * After the last byte moved, the poller keeps looking every turn of the event loop for this
   * long (hot), then waits idle up to `idlePollMs` at a time: the UBRing peer rings no bell.
   */
  spinMs: z.number().min(0).max(10_000).default(2),
  /**
   * Longest idle wait of the poller (ms; a futex wait off the JS thread, a timer without the
   * helper): about the added latency of the first call after a pause.
   */
  idlePollMs: z.number().int().min(1).max(1000).default(1),
}).strict();

/** Parsed options (defaults filled). */
export type BrpcUbringOptions = z.output<typeof brpcUbringOptionsSchema>;
/** Options as a caller writes them. */
export type BrpcUbringOptionsInput = z.input<typeof brpcUbringOptionsSchema>;
