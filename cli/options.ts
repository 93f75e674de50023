/**
 * Shared CLI helpers: validating the parsed command line with its zod schema (through the one
 * {@link parseOptions}), and turning a failure into one clear line plus the usage. CLI only;
 * the main JS thread.
 * @module
 */
import type { z } from "zod";
import { parseOptions } from "../util/options.ts";
import { reportError } from "./style.ts";

/**
 * Validates a command's parsed flags (`{ "flag-name": value }`) with its schema; the first bad
 * flag is named in the thrown VerbusError (`option: field port: …`).
 */
export function parseCommandLine<T extends z.ZodType>(schema: T, values: unknown): z.output<T> {
  return parseOptions(schema, values, "option");
}

/** Exit code of a usage error (bad command line): the convention of every command. */
export const EXIT_USAGE = 2;
/** Exit code of a failed call, connection or run. */
export const EXIT_FAILED = 1;

/**
 * Prints what was wrong (naming the option) and the usage on stderr — with `json`, one JSON line
 * instead — and returns exit code 2.
 */
export function usageError(command: string, e: unknown, help: string, json = false): number {
  const msg = e instanceof Error ? e.message : String(e);
  return reportError(command, msg, EXIT_USAGE, json, help);
}

/** How a command's options take their values. */
export interface ArgSpec {
  /** Options that take one value (`--port 8000` or `--port=8000`). */
  readonly values: readonly string[];
  /** Options without a value (`--json`); `--json=true|false` is accepted too. */
  readonly flags?: readonly string[];
  /** Options that take two values (`--put K V`, or `--put=K V`). */
  readonly pairs?: readonly string[];
  /**
   * Of `values`, those that may be given more than once (`--echo a --echo b`): their value is
   * the array of every value given, in order. Other options given twice keep the last value.
   */
  readonly repeats?: readonly string[];
}

/**
 * Splits argv into `{ "flag-name": value }` for {@link parseCommandLine}: every option is
 * accepted as `--name value` and as `--name=value`. Throws naming the option that is unknown,
 * lacks its value, or is a flag given a value other than true/false.
 */
export function splitArgs(args: readonly string[], spec: ArgSpec): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith("--")) throw new Error(`unexpected argument ${JSON.stringify(a)}`);
    const eq = a.indexOf("=");
    const k = eq < 0 ? a.slice(2) : a.slice(2, eq);
    const inline = eq < 0 ? undefined : a.slice(eq + 1);
    const next = (): string => {
      if (args[i + 1] === undefined) throw new Error(`--${k} needs a value`);
      return args[++i];
    };
    if (spec.flags?.includes(k)) {
      if (inline !== undefined && inline !== "true" && inline !== "false") {
        throw new Error(`--${k} takes no value (or =true / =false), got ${JSON.stringify(inline)}`);
      }
      values[k] = inline !== "false";
    } else if (spec.pairs?.includes(k)) {
      const first = inline ?? next();
      if (args[i + 1] === undefined) throw new Error(`--${k} takes two values`);
      values[k] = [first, args[++i]];
    } else if (spec.repeats?.includes(k) && spec.values.includes(k)) {
      ((values[k] ??= []) as string[]).push(inline ?? next());
    } else if (spec.values.includes(k)) {
      values[k] = inline ?? next();
    } else throw new Error(`unknown option --${k}`);
  }
  return values;
}
