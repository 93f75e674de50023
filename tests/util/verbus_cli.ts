/**
 * Runs the `verbus` command line (`cli/main.ts`) in a child process for CLI tests, on this
 * runtime or the other one, and reads its `--json` output lines.
 * @module
 */
import { execFile, spawnSync } from "node:child_process";
import { join } from "node:path";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "./proc.ts";

/** What a finished `verbus` run left: its exit code and its output. */
export interface VerbusRun {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/** The runtime's argv that runs `verbus ARGS` (`run -A` before the script on Deno). */
export function verbusArgv(
  args: string[],
  runtime: RuntimeName = RUNTIME as RuntimeName,
): string[] {
  const main = join(REPO_ROOT, "cli/main.ts");
  return runtime === "deno" ? ["run", "-A", main, ...args] : [main, ...args];
}

/**
 * Runs `verbus ARGS` on `runtime` (this one unless named) and waits for it, blocking this
 * process: a server that must answer it has to live in another process. Killed after
 * `timeoutMs` (120 s unless named).
 */
export function verbus(
  args: string[],
  opts: { runtime?: RuntimeName; timeoutMs?: number; env?: Record<string, string> } = {},
): VerbusRun {
  const runtime = opts.runtime ?? (RUNTIME as RuntimeName);
  const r = spawnSync(runtimeBinary(runtime), verbusArgv(args, runtime), {
    cwd: REPO_ROOT,
    encoding: "utf8",
    timeout: opts.timeoutMs ?? 120_000,
    ...(opts.env ? { env: opts.env } : {}),
  });
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" };
}

/**
 * Like {@link verbus} (this runtime, killed after 120 s), without blocking this process: a peer
 * in this process can answer it.
 */
export function verbusAsync(args: string[]): Promise<VerbusRun> {
  const argv = verbusArgv(args);
  return new Promise((resolve) => {
    execFile(
      runtimeBinary(RUNTIME as RuntimeName),
      argv,
      { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 },
      (e, out, err) => {
        const code = e === null ? 0 : typeof e.code === "number" ? e.code : null;
        resolve({ code, out: String(out ?? ""), err: String(err ?? "") });
      },
    );
  });
}

/** The JSON objects among `out`'s lines (those starting with `{`), in order. */
export function jsonLines(out: string): Record<string, unknown>[] {
  return out.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}
