/**
 * Bench children that print their figures as a JSON line (`verbus call --json`, the baselines):
 * the last line of their stdout that starts with `{`, parsed. Shared by the e2e and A/B harnesses.
 * @module
 */
import { spawn } from "node:child_process";

/** The child's command: the program and its arguments. */
export type ChildCommand = readonly [string, readonly string[]];

/** The last JSON line of `stdout`; throws naming `cmd` and `why` (exit, stderr) when there is none. */
export function lastJson(cmd: ChildCommand, stdout: string, why: string): Record<string, unknown> {
  const line = stdout.trim().split("\n").filter((l) => l.startsWith("{")).pop();
  if (!line) throw new Error(`${cmd[1].join(" ")} printed no JSON (${why})`);
  return JSON.parse(line) as Record<string, unknown>;
}

/**
 * Runs `cmd` in `cwd` and resolves with its last JSON line, read once its output streams closed
 * (an `exit` can come before the last stdout bytes were read). Killed after `timeoutMs`.
 */
export function childJson(
  cmd: ChildCommand,
  cwd: string,
  timeoutMs = 300_000,
): Promise<Record<string, unknown>> {
  return new Promise((res, rej) => {
    const p = spawn(cmd[0], [...cmd[1]], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    p.stdout!.on("data", (d) => (out += d));
    p.stderr!.on("data", (d) => (err += d));
    const timer = setTimeout(() => p.kill("SIGTERM"), timeoutMs);
    p.on("close", (code) => {
      clearTimeout(timer);
      try {
        res(lastJson(cmd, out, `exit ${code}: ${err}`));
      } catch (e) {
        rej(e);
      }
    });
  });
}
