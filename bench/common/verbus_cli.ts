/**
 * The command line of a `verbus` CLI child of one runtime, run from the checkout `root`, with
 * this checkout's pinned runtimes (so two checkouts compared side by side differ only in verbus).
 * Shared by the A/B and CPU-split harnesses.
 * @module
 */
import { join, resolve } from "node:path";

const HERE = resolve(new URL("../..", import.meta.url).pathname);

/** The pinned runtimes of this checkout. */
export const RUNTIME_BIN: Readonly<Record<"deno" | "bun", string>> = {
  deno: join(HERE, "node_modules/.bin/deno"),
  bun: join(HERE, "node_modules/.bin/bun"),
};

/** `verbus <args>` of checkout `root` under runtime `rt` (Deno with `root`'s `deno.json`). */
export function verbusCli(rt: string, root: string, args: readonly string[]): [string, string[]] {
  return rt === "deno"
    ? [RUNTIME_BIN.deno, [
      "run",
      "-A",
      "--config",
      join(root, "deno.json"),
      join(root, "cli/main.ts"),
      ...args,
    ]]
    : [RUNTIME_BIN.bun, [join(root, "cli/main.ts"), ...args]];
}
