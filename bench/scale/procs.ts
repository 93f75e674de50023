/**
 * The scale harnesses' child processes (`run.ts`, `idle_profile.ts`): the command line of a
 * server or client script under either runtime (raised fd limit; another checkout's `mod.ts` by
 * `VERBUS_ROOT`), starting one with its stdout JSON lines collected, stopping it, and sweeping
 * the shm objects it may have left. Runs under Deno (the harness).
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { within } from "../common/args.ts";

/** A runtime the children run on. */
export type Rt = "deno" | "bun";

const HERE = resolve(new URL(".", import.meta.url).pathname);
/** This checkout (the harness scripts and the runtimes' binaries come from it). */
export const SELF_ROOT: string = resolve(HERE, "../..");
/** The runtimes' binaries. */
export const BIN: Record<Rt, string> = {
  deno: join(SELF_ROOT, "node_modules/.bin/deno"),
  bun: join(SELF_ROOT, "node_modules/.bin/bun"),
};

/** The fd limit children get: 20,000 if the hard limit allows it, else the hard limit. */
export function fdLimit(): { limit: number; note: string } {
  const want = 20000;
  const hard = spawnSync("bash", ["-c", "ulimit -Hn"], { encoding: "utf8" }).stdout.trim();
  const h = hard === "unlimited" ? Infinity : Number(hard);
  if (h >= want) return { limit: want, note: `children run with ulimit -n ${want}` };
  return {
    limit: h,
    note: `could not raise the fd limit to ${want}: the hard limit is ${hard}; ` +
      `children run with ulimit -n ${h}`,
  };
}

/**
 * The command running `script` (a file of bench/scale) under `rt` with `args`, with the fd limit
 * raised to `fds`; `root`'s deno.json on Deno (its import map).
 */
export function command(
  rt: Rt,
  root: string,
  fds: number,
  script: string,
  args: string[],
): string[] {
  const s = join(HERE, script);
  const run = rt === "deno"
    ? [BIN.deno, "run", "-A", "--config", join(root, "deno.json"), s, ...args]
    : [BIN.bun, s, ...args];
  return ["bash", "-c", `ulimit -n ${fds} || exit 97; exec "$0" "$@"`, ...run];
}

/** A started child. */
export interface Proc {
  pid: number;
  exited: Promise<number>;
  /** Its stdout lines that look like JSON objects so far. */
  lines: () => string[];
  /** The last 20,000 characters of its stderr. */
  stderr: () => string;
  kill: (sig: "SIGTERM" | "SIGKILL") => void;
}

/** Starts `cmd` in `root` with `env` added and `VERBUS_ROOT=root`. */
export function start(cmd: string[], root: string, env: Record<string, string> = {}): Proc {
  const p = spawn(cmd[0], cmd.slice(1), {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env, VERBUS_ROOT: root, NO_COLOR: "1" },
  });
  let out = "", err = "";
  p.stdout!.on("data", (d) => (out += d));
  p.stderr!.on("data", (d) => (err = (err + d).slice(-20000)));
  const exited = new Promise<number>((r) => p.on("exit", (c, s) => r(c ?? (s ? -1 : -2))));
  return {
    pid: p.pid ?? -1,
    exited,
    lines: () => out.split("\n").filter((l) => l.startsWith("{")),
    stderr: () => err,
    kill: (s) => void p.kill(s),
  };
}

/** SIGTERM, then SIGKILL after 5 s. */
export async function stop(p: Proc): Promise<void> {
  p.kill("SIGTERM");
  if (await within(p.exited, 5000) === "timeout") {
    p.kill("SIGKILL");
    await within(p.exited, 5000);
  }
}

/** Removes shm objects the processes we started may have left (`/dev/shm/verbus-<pid>-*`). */
export function sweepShm(pids: number[]): number {
  let n = 0;
  for (const f of readdirSync("/dev/shm")) {
    if (pids.some((pid) => f.startsWith(`verbus-${pid}-`))) {
      rmSync(join("/dev/shm", f), { force: true });
      n++;
    }
  }
  return n;
}

/**
 * Waits (up to 30 s) for a started `server.ts` to print its `{"port":…,"pid":…}` line; the port
 * (0 if it never did) and the server's own pid (the child's if it did not say).
 */
export async function serverPort(server: Proc): Promise<{ port: number; pid: number }> {
  let port = 0, pid = server.pid;
  for (let i = 0; i < 300 && !port; i++) {
    for (const l of server.lines()) {
      const j = JSON.parse(l);
      if (j.port) (port = j.port), (pid = j.pid ?? pid);
    }
    if (!port) await new Promise((r) => setTimeout(r, 100));
  }
  return { port, pid };
}
