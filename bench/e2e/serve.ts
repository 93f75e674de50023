/**
 * A server child process for the bench harnesses (`verbus serve --port 0 --json`, or any script
 * that prints a JSON line with its `"port"`): started, its port read
 * from its JSON line, stopped with SIGTERM.
 * @module
 */
import { spawn } from "node:child_process";

/** A running server process. */
export interface ServerProcess {
  port: number;
  /** Its process id. */
  pid: number;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

/** Starts `bin args` (a `verbus serve … --json` command) in `cwd`; resolves once it printed its port. */
export async function startServe(
  bin: string,
  args: readonly string[],
  cwd: string,
): Promise<ServerProcess> {
  const p = spawn(bin, [...args], { cwd, stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<void>((r) => p.on("exit", () => r()));
  const port = await new Promise<number>((res, rej) => {
    let out = "";
    p.stdout!.on("data", (d) => {
      out += d;
      const m = /"port":(\d+)/.exec(out);
      if (m) res(Number(m[1]));
    });
    p.on("exit", (c) => rej(new Error(`server exited ${c}`)));
  });
  return {
    port,
    pid: p.pid!,
    stop: () => {
      p.kill("SIGTERM");
      return exited;
    },
  };
}
