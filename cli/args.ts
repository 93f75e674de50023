/**
 * A command line split by `node:util`'s `parseArgs` (the same on Deno and Bun), with how each
 * option takes its values read from its field in the command's zod schema — so an option is
 * added by adding its field: `z.boolean()` is a flag (`--json`, `--json=false`), `z.tuple([…])`
 * takes that many values (`--put K V`, `--put=K V`), `z.array(…)` may be given again (every value
 * kept, in order), anything else takes one value (`--port 8000`, `--port=8000`; given again, the
 * last counts). The occurrences come back in the order given (the ops of `verbus call` run so).
 * CLI only; any thread.
 * @module
 */
import { parseArgs } from "node:util";
import { z } from "zod";
import { VerbusError } from "../errors.ts";
import { didYouMean } from "./did_you_mean.ts";

/** How an option takes its values. */
export interface OptionKind {
  /** 0: a flag; 1: one value; 2 or more: that many (a tuple field). */
  readonly arity: number;
  /** An array field: may be given again, every value kept. */
  readonly repeat: boolean;
}

/** One option as given, in order: its name and what followed it. */
export interface Occurrence {
  readonly name: string;
  /** A flag's true/false, one value, or a tuple's values. */
  readonly value: boolean | string | readonly string[];
}

/** The schema inside optional / default / nullable wrappers. */
export function unwrapField(field: z.ZodType): z.ZodType {
  let f = field;
  while (
    f instanceof z.ZodOptional || f instanceof z.ZodDefault || f instanceof z.ZodNullable ||
    f instanceof z.ZodPrefault
  ) f = f.unwrap() as z.ZodType;
  return f;
}

function arityOf(field: z.ZodType): number {
  const f = unwrapField(field);
  if (f instanceof z.ZodBoolean) return 0;
  if (f instanceof z.ZodTuple) return f.def.items.length;
  return 1;
}

/** Each option's {@link OptionKind}, read from the fields of `shape`. */
export function optionKinds(shape: Readonly<Record<string, z.ZodType>>): Map<string, OptionKind> {
  const kinds = new Map<string, OptionKind>();
  for (const [name, field] of Object.entries(shape)) {
    const f = unwrapField(field);
    kinds.set(
      name,
      f instanceof z.ZodArray
        ? { arity: arityOf(f.element as z.ZodType), repeat: true }
        : { arity: arityOf(f), repeat: false },
    );
  }
  return kinds;
}

const usage = (message: string) => new VerbusError("INVALID_OPTIONS", message);

/**
 * The options of `args` in the order given. Throws (INVALID_OPTIONS) naming what is wrong: an
 * unknown option (with the closest known name: "did you mean --echo?"), a missing value, a flag
 * given a value other than true / false, a stray argument.
 */
export function tokenize(
  args: readonly string[],
  kinds: ReadonlyMap<string, OptionKind>,
): Occurrence[] {
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const [name, k] of kinds) options[name] = { type: k.arity === 0 ? "boolean" : "string" };
  const { tokens } = parseArgs({
    args: [...args],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const out: Occurrence[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (t.kind === "positional") throw usage(`unexpected argument ${JSON.stringify(t.value)}`);
    if (t.kind === "option-terminator") throw usage(`unexpected argument "--"`);
    const kind = kinds.get(t.name);
    if (kind === undefined || !t.rawName.startsWith("--")) {
      const near = t.rawName.startsWith("--") ? didYouMean(t.name, kinds.keys()) : undefined;
      throw usage(`unknown option ${t.rawName}${near ? ` (did you mean --${near}?)` : ""}`);
    }
    const name = t.rawName;
    if (kind.arity === 0) {
      if (t.value !== undefined && t.value !== "true" && t.value !== "false") {
        throw usage(`${name} takes no value (or =true / =false), got ${JSON.stringify(t.value)}`);
      }
      out.push({ name: t.name, value: t.value !== "false" });
      continue;
    }
    // `--echo --ping` is a forgotten value, not the message "--ping" (`--echo=--ping` is one).
    if (t.value === undefined || (!t.inlineValue && t.value.startsWith("--"))) {
      throw usage(
        kind.arity === 1 ? `${name} needs a value` : `${name} takes ${words(kind.arity)} values`,
      );
    }
    if (kind.arity === 1) {
      out.push({ name: t.name, value: t.value });
      continue;
    }
    const values = [t.value];
    while (values.length < kind.arity && tokens[i + 1]?.kind === "positional") {
      values.push((tokens[++i] as { value: string }).value);
    }
    if (values.length < kind.arity) throw usage(`${name} takes ${words(kind.arity)} values`);
    out.push({ name: t.name, value: values });
  }
  return out;
}

const words = (n: number) => ["zero", "one", "two", "three", "four"][n] ?? String(n);

/**
 * The occurrences as `{ name: value }` for the schema: a repeatable option's values in an array
 * in order, another's last value.
 */
export function collect(
  order: readonly Occurrence[],
  kinds: ReadonlyMap<string, OptionKind>,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const { name, value } of order) {
    if (kinds.get(name)?.repeat) ((values[name] ??= []) as unknown[]).push(value);
    else values[name] = value;
  }
  return values;
}
