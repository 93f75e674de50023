/**
 * Shared CLI helpers: validating the parsed command line with its zod schema (through the one
 * {@link parseOptions}), and turning a failure into one clear line plus the usage. CLI only;
 * the main JS thread.
 * @module
 */
import type { z } from "zod";
import { parseOptions } from "../util/options.ts";

/**
 * Validates a command's parsed flags (`{ "flag-name": value }`) with its schema; the first bad
 * flag is named in the thrown VerbusError (`option: field port: …`).
 */
export function parseCommandLine<T extends z.ZodType>(schema: T, values: unknown): z.output<T> {
  return parseOptions(schema, values, "option");
}

/** Prints what was wrong (naming the option) and the usage; returns exit code 2. */
export function usageError(command: string, e: unknown, help: string): number {
  const msg = e instanceof Error ? e.message : String(e);
  console.error(`verbus ${command}: ${msg}\n\n${help}`);
  return 2;
}
