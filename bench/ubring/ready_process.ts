/**
 * A long-running child of a bench (a brpc example server, `verbus serve`) that is ready once its
 * output matches a pattern: its port (the pattern's first group), its pid, and how to stop it.
 * Used by `run.ts` and `ab.ts`. Control path of a bench script; one JS thread.
 * @module
 */
import { spawn } from "node:child_process";

/** A started child. */
export interface ReadyProcess {
  readonly port: number;
  readonly pid: number;
  /** SIGTERM, resolved once it exited. */
  stop(): Promise<void>;
}

/** Starts `cmd` in `cwd`; rejects with its output when `ready` did not match within 30 s. */
export function startReady(
  cmd: readonly [string, readonly string[]],
  ready: RegExp,
  cwd: string,
): Promise<ReadyProcess> {
  return new Promise((res, rej) => {
    const p = spawn(cmd[0], [...cmd[1]], { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    const timer = setTimeout(() => rej(new Error(`not ready: ${cmd.join(" ")}\n${out}`)), 30_000);
    const on = (d: Uint8Array) => {
      out += new TextDecoder().decode(d);
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        res({
          port: Number(m[1]),
          pid: p.pid!,
          stop: () =>
            new Promise<void>((r) => {
              p.once("exit", () => r());
              p.kill("SIGTERM");
            }),
        });
      }
    };
    p.stdout!.on("data", on);
    p.stderr!.on("data", on);
  });
}

/** What brpc's example servers print once serving (its first group: the port). */
export const BRPC_SERVER_READY = /is serving on port=(\d+)/;
