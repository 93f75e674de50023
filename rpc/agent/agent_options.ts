/**
 * The agent's options (a zod schema: types, defaults and messages from one source) and what it
 * counts: the public shape of {@link startAgent}'s argument and of `Agent.stats()`.
 * Control path; one JS thread.
 * @module
 */
import { z } from "zod";

/** Options of {@link startAgent}; unknown keys are rejected and messages name the field. */
export const agentOptionsSchema: z.ZodObject<{
  name: z.ZodDefault<z.ZodString>;
  entries: z.ZodDefault<z.ZodNumber>;
  producers: z.ZodDefault<z.ZodNumber>;
  slots: z.ZodDefault<z.ZodNumber>;
  slotBytes: z.ZodDefault<z.ZodNumber>;
  reclaimMs: z.ZodDefault<z.ZodNumber>;
  sweepMs: z.ZodDefault<z.ZodNumber>;
  idleAfterMs: z.ZodDefault<z.ZodNumber>;
  wakeDelayMs: z.ZodDefault<z.ZodNumber>;
  timeoutMs: z.ZodDefault<z.ZodNumber>;
  spillBytes: z.ZodDefault<z.ZodNumber>;
  client: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
}, z.core.$strict> = z.object({
  /** The agent's name: local processes join it as `agent:<name>`. */
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "expected 1-64 of [A-Za-z0-9_.-]").default(
    "default",
  ),
  /** Ring entries (a power of two ≥ producers × slots, else producers may see FULL). */
  entries: z.number().int().min(2).max(65536).default(1024),
  /** Processes that may be joined at once. */
  producers: z.number().int().min(1).max(1024).default(32),
  /** Calls in flight per process. */
  slots: z.number().int().min(1).max(1024).default(32),
  /** Bytes per slot (a power of two): the largest request or response a slot holds. */
  slotBytes: z.number().int().min(256).max(1 << 24).default(64 * 1024),
  /**
   * Bytes of each process's spill area (a multiple of 8192; 0: none): a request or response
   * larger than a slot goes there, requests in one half and responses in the other, so the
   * largest record through the agent is half of it.
   */
  spillBytes: z.number().int().min(0).max(1 << 30).multipleOf(8192).default(4 * 1024 * 1024),
  /** A position claimed and not published for this long is reclaimed (its producer died). */
  reclaimMs: z.number().int().min(1).max(600_000).default(1000),
  /** How often dead producers are looked for. */
  sweepMs: z.number().int().min(10).max(60_000).default(250),
  /** With no request for this long (ms), the agent sleeps in its futex instead of polling. */
  idleAfterMs: z.number().min(0).max(1000).default(0.2),
  /**
   * How long (ms) the wake-up of a sleeping producer may wait while most of its calls still run
   * here: it is woken once at least half of its calls in flight are answered, or after this long
   * (0: at once, after every batch of answers).
   */
  wakeDelayMs: z.number().min(0).max(100).default(0.2),
  /** The deadline of a forwarded call whose producer gave none. */
  timeoutMs: z.number().int().min(1).default(30_000),
  /** Options of the remote connection (`connect()`'s; validated there). */
  client: z.record(z.string(), z.unknown()).default({}),
}).strict();
/** {@link startAgent} options as users write them. */
export type AgentOptions = z.input<typeof agentOptionsSchema>;

/** What an agent counts. */
export interface AgentStats {
  /** Calls forwarded to the remote server, and how many of them failed. */
  forwarded: number;
  failed: number;
  /**
   * Forwarded calls that cost a promise in the agent (over TCP, or waiting for a free remote
   * slot); the others were posted with their answer's destination (`Client.callTo`).
   */
  viaPromise: number;
  /** Drains that found requests: each batch was posted to the remote session under one doorbell. */
  batches: number;
  /**
   * The remote fabric session's counters: calls posted, of them posted without a promise (their
   * answers copied straight into the producers' slots), doorbells rung for requests.
   */
  remote: { submitted: number; sunk: number; doorbells: number };
  /** Requests answered with an error because their record was malformed. */
  badRecords: number;
  /** The ring's counters (delivered, reclaimed, garbage, rejected, producersReclaimed, attached). */
  ring: Record<string, number>;
  /** The remote fabric ("shm", "verbs", "urma", "tcp"). */
  fabric: string;
}
