/**
 * Shared CLI helpers: turning parse/validation failures into one clear line plus the usage.
 * @module
 */
import { ZodError } from "zod";

/** Prints what was wrong (naming the option) and the usage; returns exit code 2. */
export function usageError(command: string, e: unknown, help: string): number {
  let msg: string;
  if (e instanceof ZodError) {
    const i = e.issues[0];
    const key = i.path.length ? `--${i.path.join(".")}` : "options";
    msg = i.code === "unrecognized_keys"
      ? `unknown option ${(i as { keys?: string[] }).keys?.map((k) => `--${k}`).join(", ")}`
      : `${key}: ${i.message}`;
  } else {
    msg = e instanceof Error ? e.message : String(e);
  }
  console.error(`verbus ${command}: ${msg}\n\n${help}`);
  return 2;
}
