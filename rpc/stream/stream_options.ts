/**
 * The options of one stream (either side), as a zod schema with brpc's defaults where brpc has
 * one (`max_buf_size` 2 MiB).
 *
 * Threading: pure; any thread.
 * @module
 */
import { z } from "zod";
import { parseOptions } from "../../util/options.ts";

/** The fields of {@link streamOptionsSchema} (written out for the published types). */
export type StreamOptionsShape = {
  maxBufSize: z.ZodDefault<z.ZodNumber>;
  maxUnreadBytes: z.ZodDefault<z.ZodNumber>;
  maxMessageSize: z.ZodDefault<z.ZodNumber>;
};

/** Options of a stream, validated (unknown keys are refused). */
export const streamOptionsSchema: z.ZodObject<StreamOptionsShape, z.core.$strict> = z.object({
  /**
   * The writer's window, brpc's `max_buf_size`: bytes written and not yet reported consumed by
   * the reader. `write()` waits while the window is full (one message may overshoot it, as in
   * brpc). 0 = no flow control (the peer is then not asked for feedback).
   */
  maxBufSize: z.number().int().min(0).max(2 ** 40).default(2 * 1024 * 1024),
  /**
   * The reader's bound: bytes received and not yet read. A peer that sends past it (one that
   * ignores flow control) gets the stream reset; the reader sees kind "overrun".
   */
  maxUnreadBytes: z.number().int().positive().max(2 ** 40).default(16 * 1024 * 1024),
  /** Largest message reassembled from continuation segments; past it the stream is reset. */
  maxMessageSize: z.number().int().positive().max(2 ** 40).default(64 * 1024 * 1024),
}).strict();

/** What a caller passes. */
export type StreamOptions = z.input<typeof streamOptionsSchema>;
/** The validated options. */
export type ResolvedStreamOptions = z.output<typeof streamOptionsSchema>;

/** Validates `options`; throws a VerbusError INVALID_OPTIONS naming the bad field. */
export function resolveStreamOptions(options: StreamOptions | undefined): ResolvedStreamOptions {
  return parseOptions(streamOptionsSchema, options ?? {}, "invalid stream options");
}
