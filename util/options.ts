/**
 * One way to validate anything that comes from outside a module — user options, a peer's hello,
 * a provider's offer — with its zod schema: the value on success, else a {@link VerbusError}
 * whose message names the first bad field (`what: field a.b: message`). Pure; any thread.
 * @module
 */
import type { z } from "zod";
import { VerbusError, type VerbusErrorCode } from "../errors.ts";

/** `what: field a.b: message` for the first issue of a failed parse. */
export function issueText(error: z.ZodError, what: string): string {
  let i: z.core.$ZodIssue | undefined = error.issues[0];
  let path: PropertyKey[] = i?.path ?? [];
  // A union none of whose branches matched: the issue of the branch the value was meant for
  // (the one that got past the type check at its root).
  while (i?.code === "invalid_union") {
    const branch: z.core.$ZodIssue[] | undefined = i.errors.find((b) =>
      b[0] !== undefined && !(b[0].code === "invalid_type" && b[0].path.length === 0)
    );
    if (branch === undefined) break;
    const inner: z.core.$ZodIssue = branch[0];
    path = [...path, ...inner.path];
    i = inner;
  }
  return `${what}: field ${path.join(".") || "(root)"}: ${i?.message ?? "invalid"}`;
}

/**
 * Parses `value` with `schema`; throws a VerbusError with `code` (INVALID_OPTIONS for a
 * caller's options, HANDSHAKE for what a peer sent) naming the first bad field.
 */
export function parseOptions<T extends z.ZodType>(
  schema: T,
  value: unknown,
  what: string,
  code: VerbusErrorCode = "INVALID_OPTIONS",
): z.output<T> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new VerbusError(code, issueText(r.error, what));
}

/** Like {@link parseOptions}, but returns the message instead of throwing (for refusals). */
export function checkOptions<T extends z.ZodType>(
  schema: T,
  value: unknown,
  what: string,
): { ok: true; value: z.output<T> } | { ok: false; why: string } {
  const r = schema.safeParse(value);
  return r.success ? { ok: true, value: r.data } : { ok: false, why: issueText(r.error, what) };
}

/**
 * The schema `object.partial().default({})` of a strict zod object with fields `S` — written out
 * so that exported schemas built with it have explicit types (JSR's no-slow-types rule).
 */
export type PartialDefault<S extends z.core.$ZodShape> = z.ZodDefault<
  z.ZodObject<{ [K in keyof S]: z.ZodOptional<S[K]> }, z.core.$strict>
>;
