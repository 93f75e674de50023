/**
 * The options and result types of the agent client (`connect("agent:NAME", options)`,
 * `rpc/agent/agent_client.ts`). One zod schema gives the types, the defaults and the messages.
 *
 * Pure declarations: any thread.
 * @module
 */
import { z } from "zod";
import type { ClientCallResult } from "../client/client_options.ts";
import type { CallPath } from "../client/selector.ts";

/** Default of `napUs` (µs). */
const NAP_US_DEFAULT = 1000;

/** Options of `connect("agent:NAME", options)`. */
export const agentClientOptionsSchema: z.ZodObject<{
  timeoutMs: z.ZodDefault<z.ZodNumber>;
  fallback: z.ZodOptional<
    z.ZodUnion<
      readonly [z.ZodString, z.ZodObject<{ host: z.ZodString; port: z.ZodNumber }, z.core.$strip>]
    >
  >;
  fallbackOptions: z.ZodDefault<z.ZodRecord<z.ZodString, z.ZodUnknown>>;
  idleAfterMs: z.ZodDefault<z.ZodNumber>;
  napUs: z.ZodDefault<z.ZodNumber>;
}, z.core.$strict> = z.object({
  /** Deadline of a call (ms) unless the call gives its own. */
  timeoutMs: z.number().int().min(1).default(30_000),
  /** The remote server, for calls the agent cannot take (ring FULL, too large, no agent). */
  fallback: z.union([z.string().min(1), z.object({ host: z.string(), port: z.number().int() })])
    .optional(),
  /** `connect()` options of the fallback connection. */
  fallbackOptions: z.record(z.string(), z.unknown()).default({}),
  /** With calls in flight and no answer for this long (ms), sleep in the futex instead of polling. */
  idleAfterMs: z.number().min(0).max(1000).default(0.2),
  /**
   * Waiting for answers, first block the calling thread for at most this many µs (its event loop
   * — timers, I/O, a server on the same thread — waits too), woken by the agent's wake-up; only
   * then sleep off-thread (0: never block the thread). Naps that end at this bound instead of by
   * a wake-up back off (up to 255 parked waits between naps). The default covers the agent's
   * answer to a batch on a loaded 2-core host (~30 answers per nap at 8 × 32 in flight, 4 % of
   * naps missing); 200 µs, the progress engine's nap, missed most of them there.
   */
  napUs: z.number().int().min(0).max(100_000).default(NAP_US_DEFAULT),
}).strict();
/** Options of an agent client as users write them. */
export type AgentClientOptions = z.input<typeof agentClientOptionsSchema>;

/** A call's answer through the agent ("direct": over the fallback connection). */
export interface AgentCallResult extends ClientCallResult {
  via: "agent" | "direct";
}

/** Counters of an agent client. */
export interface AgentClientStats {
  fabric: string;
  calls: Record<CallPath, number>;
  /** Calls that went over the fallback connection, and why. */
  direct: number;
  /** Times the ring was FULL when a call was posted. */
  full: number;
  /** Times this client joined an agent (1 + reconnections). */
  joins: number;
  /**
   * How this client waited for answers: naps (its thread blocked until the agent woke it, or
   * `napUs` passed: a miss) and parked waits (off-thread, the event loop running).
   */
  waits: { naps: number; napMisses: number; parks: number };
  /** The agent ring's counters (null while not joined). */
  ring: Record<string, number> | null;
}
