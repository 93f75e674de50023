/**
 * How every `verbus` command reads its command line: split by `parseArgs` (cli/args.ts), checked
 * by the command's zod schema (its types, defaults and messages), and a failure turned into one
 * short line naming the option and what was wrong, plus where to read more (`see: verbus help
 * call`), exit 2. CLI only; the main JS thread.
 * @module
 */
import { z } from "zod";
import { VerbusError } from "../errors.ts";
import { collect, type Occurrence, optionKinds, tokenize, unwrapField } from "./args.ts";
import { plainIssue } from "./plain_issue.ts";
import { reportError } from "./style.ts";

/** Exit code of a usage error (bad command line): the convention of every command. */
export const EXIT_USAGE = 2;
/** Exit code of a failed call, connection or run. */
export const EXIT_FAILED = 1;

/** A command's schema: a zod object whose fields are its options (`"timeout-ms"`, …). */
export type CommandSchema = z.ZodObject;

/** A parsed command line: the validated options, and every option in the order given. */
export interface CommandLine<T> {
  readonly options: T;
  readonly order: readonly Occurrence[];
}

function valueAt(values: unknown, path: readonly PropertyKey[]): unknown {
  let v = values;
  for (const k of path) v = (v as Record<PropertyKey, unknown> | undefined)?.[k];
  return v;
}

/** `--port: expected a number, got "abc"` for the first issue of a failed parse of `values`. */
function describe(error: z.ZodError, values: unknown): string {
  const iss = error.issues[0];
  const name = iss?.path.length ? `--${String(iss.path[0])}` : "";
  const message = iss?.message ?? "invalid";
  // A rule across options (a refine) says it all; it names its options itself.
  if (iss === undefined || iss.code === "custom") {
    return message.startsWith("--") || !name ? message : `${name}: ${message}`;
  }
  const given = valueAt(values, iss.path);
  if (given === undefined) return `${name} is required`;
  return `${name}: ${message}, got ${JSON.stringify(given)}`;
}

/** Validates `values` with `schema`; throws INVALID_OPTIONS in the words of {@link describe}. */
function checkValues<T extends z.ZodType>(schema: T, values: unknown): z.output<T> {
  const r = schema.safeParse(values, { error: plainIssue });
  if (r.success) return r.data;
  throw new VerbusError("INVALID_OPTIONS", describe(r.error, values));
}

/**
 * Splits `args` into `{ "flag-name": value }` as `schema`'s fields say each option is given (see
 * cli/args.ts), unvalidated. Throws naming an unknown option, a missing value, a stray argument.
 */
export function splitArgs(args: readonly string[], schema: CommandSchema): Record<string, unknown> {
  const kinds = optionKinds(schema.shape);
  return collect(tokenize(args, kinds), kinds);
}

/**
 * Parses and validates a command line: every option as `--name value` or `--name=value`; also
 * returns every option in the order given. Throws (INVALID_OPTIONS) with one line naming the
 * option and what was wrong.
 */
export function parseInOrder<S extends CommandSchema>(
  schema: S,
  args: readonly string[],
): CommandLine<z.output<S>> {
  const kinds = optionKinds(schema.shape);
  const order = tokenize(args, kinds);
  return { options: checkValues(schema, collect(order, kinds)), order };
}

/** {@link parseInOrder}'s options alone: what a command whose options have no order needs. */
export function parseCommandLine<S extends CommandSchema>(
  schema: S,
  args: readonly string[],
): z.output<S> {
  return parseInOrder(schema, args).options;
}

/**
 * One occurrence of option `name` checked alone (a repeated option's every value is checked
 * with the whole; this is for options whose last value alone the whole keeps).
 */
export function checkOccurrence(schema: CommandSchema, o: Occurrence): unknown {
  const field = unwrapField(schema.shape[o.name] as z.ZodType);
  const one = field instanceof z.ZodArray ? field.element as z.ZodType : field;
  return checkValues(z.object({ [o.name]: one }), { [o.name]: o.value })[o.name];
}

/**
 * Prints what was wrong in one line and where the usage is (`see: verbus help COMMAND`) on
 * stderr — with `json`, one JSON line instead — and returns exit code 2.
 */
export function usageError(command: string, e: unknown, json = false): number {
  const msg = e instanceof Error ? e.message : String(e);
  const see = `see: verbus help${command ? ` ${command}` : ""}`;
  return reportError(command, msg, EXIT_USAGE, json, see);
}
