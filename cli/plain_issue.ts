/**
 * zod's issues in the plain words of a command line: `expected a number`, `expected at most
 * 65535`, `expected one of eager, lazy, bulk, tcp` (the caller adds the option's name and what
 * was given). A schema's own messages (`"expected HOST:PORT"`) are kept: zod uses them before
 * this map. Pure; any thread.
 * @module
 */
import type { z } from "zod";
import { count } from "./plural.ts";

type Issue = z.core.$ZodRawIssue;

const A: Record<string, string> = {
  number: "a number",
  int: "a whole number",
  string: "a value",
  boolean: "true or false",
  array: "a list",
  bigint: "a whole number",
};

function bound(iss: { minimum?: unknown; maximum?: unknown; inclusive?: boolean }, big: boolean) {
  const n = Number(big ? iss.maximum : iss.minimum);
  const word = big
    ? (iss.inclusive === false ? "less than" : "at most")
    : (iss.inclusive === false ? "more than" : "at least");
  return { n, word };
}

/**
 * The plain-words message of one zod issue (usable as the `error` map of `safeParse`), without
 * the value given. Unknown issue kinds: undefined (zod's own message).
 */
export function plainIssue(iss: Issue): string | undefined {
  switch (iss.code) {
    case "invalid_type":
      return `expected ${A[iss.expected] ?? iss.expected}`;
    case "too_small":
    case "too_big": {
      const { n, word } = bound(iss, iss.code === "too_big");
      if (iss.origin === "string") {
        return n === 1 && iss.code === "too_small"
          ? "expected a value"
          : `expected ${word} ${count(n, "character")}`;
      }
      if (iss.origin === "array") return `expected ${word} ${count(n, "value")}`;
      return `expected ${word} ${n}`;
    }
    case "invalid_value":
      return iss.values.length === 1
        ? `expected ${String(iss.values[0])}`
        : `expected one of ${iss.values.map(String).join(", ")}`;
    case "not_multiple_of":
      return `expected a multiple of ${String(iss.divisor)}`;
    case "invalid_format":
      return iss.format === "regex"
        ? `expected text matching ${iss.pattern}`
        : `expected ${iss.format}`;
    case "unrecognized_keys":
      return `unknown option${iss.keys.length === 1 ? "" : "s"} --${iss.keys.join(", --")}`;
    default:
      return undefined;
  }
}
