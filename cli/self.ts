/**
 * Child processes of the `verbus` command line itself, for `verbus bench`: the command that runs
 * `verbus <args>` on this runtime (from the sources or from the single-file binary), and a
 * `verbus serve --port 0 --json` child started and stopped. CLI only; the main JS thread.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { RUNTIME } from "../util/runtime.ts";

/** A command line: the program and its arguments. */
export type CommandLine = readonly [string, readonly string[]];

/** The directory holding cli/ (the repository, or the installed package). */
function packageRoot(): string | undefined {
  const url = new URL("..", import.meta.url);
  return url.protocol === "file:" ? fileURLToPath(url) : undefined;
}

/**
 * The command that runs `verbus <args>` on this runtime: `deno run -A [--config deno.json]
 * cli/main.ts …`, `bun cli/main.ts …`, or the compiled binary itself.
 */
export function selfCommand(args: readonly string[]): CommandLine {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const root = packageRoot();
  const main = root ? join(root, "cli", "main.ts") : undefined;
  if (RUNTIME === "deno") {
    const config = root ? join(root, "deno.json") : undefined;
    return [g.Deno.execPath(), [
      "run",
      "-A",
      ...(config && existsSync(config) ? ["--config", config] : []),
      main!,
      ...args,
    ]];
  }
  const exe: string = g.process.execPath;
  // `bun build --compile`: the sources live in the binary's virtual file system.
  if (!main || !existsSync(main)) return [exe, [...args]];
  return [exe, [main, ...args]];
}

/** A running `verbus serve` child. */
export interface ServerProcess {
  /** The port from its JSON line. */
  readonly port: number;
  /** Its process id. */
  readonly pid: number;
  /** Its `--json` listening line. */
  readonly listening: Record<string, unknown>;
  /** What it wrote on stderr so far. */
  stderr(): string;
  /** SIGTERM, then waits for the exit. Safe twice. */
  stop(): Promise<void>;
}

/**
 * Starts `cmd` (a `verbus serve … --json --exit-with-stdin` command, or any server printing a
 * JSON line with its `"port"`) in `cwd`; resolves once it printed that line, rejects with its
 * stderr if it exits first. Its stdin is a pipe this process holds and never writes: however this
 * process ends (SIGKILL included), the pipe closes and a server started with `--exit-with-stdin`
 * stops — it is never left running.
 */
export async function startServe(cmd: CommandLine, cwd?: string): Promise<ServerProcess> {
  const p = spawn(cmd[0], [...cmd[1]], { cwd, stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  p.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<void>((r) => p.on("exit", () => r()));
  const listening = await new Promise<Record<string, unknown>>((res, rej) => {
    let out = "";
    p.stdout!.on("data", (d) => {
      out += d;
      const line = out.split("\n").find((l) => l.startsWith("{") && l.includes('"port"'));
      if (line && out.includes("\n", out.indexOf(line))) res(JSON.parse(line));
    });
    p.on("exit", (c) => rej(new Error(`verbus serve exited ${c}: ${err.trim()}`)));
  });
  return {
    port: Number(listening.port),
    pid: p.pid!,
    listening,
    stderr: () => err,
    stop: () => {
      p.kill("SIGTERM");
      return exited;
    },
  };
}
