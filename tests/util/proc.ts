/**
 * Child processes for tests, on either runtime: find the `deno` / `bun` binaries (env
 * `VERBUS_DENO` / `VERBUS_BUN`, else `node_modules/.bin/*` under the repo root), spawn a script,
 * wait for its `listening on <port>` line, and kill it. Tests must always kill their children in
 * `finally` (use {@link withChild}).
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";

/** The repository root (two levels above this file). */
export const REPO_ROOT: string = resolve(new URL("../..", import.meta.url).pathname);

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

function env(name: string): string | undefined {
  return RUNTIME === "deno" ? g.Deno.env.get(name) : g.process.env[name];
}

/** Path of the binary of `runtime`. Throws naming where it looked when it is missing. */
export function runtimeBinary(runtime: RuntimeName): string {
  const fromEnv = env(runtime === "deno" ? "VERBUS_DENO" : "VERBUS_BUN");
  if (fromEnv) return fromEnv;
  const local = join(REPO_ROOT, "node_modules", ".bin", runtime);
  if (existsSync(local)) return local;
  throw new Error(`no ${runtime} binary: set VERBUS_${runtime.toUpperCase()} or install ${local}`);
}

/** The runtime this process is not running on. */
export function otherRuntime(): RuntimeName {
  return RUNTIME === "deno" ? "bun" : "deno";
}

/** A spawned child that announced its port. */
export interface Child {
  readonly runtime: RuntimeName;
  readonly pid: number;
  /** The port from its `listening on <port>` line. */
  readonly port: number;
  /** Everything it wrote so far (stdout and stderr interleaved). */
  output(): string;
  /** Resolves with the exit code (or signal name) when it exits. */
  readonly exited: Promise<number | string>;
  /** Sends `signal` (default SIGKILL) and waits for the exit. Safe to call more than once. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Options of {@link spawnScript}. */
export interface SpawnOptions {
  /** Arguments after the script path. */
  args?: string[];
  /** How long to wait for the `listening on` line (default 20 s). */
  timeoutMs?: number;
  /** The ready line, instead of `listening on <port>` (the port is then 0 unless it captures one). */
  ready?: RegExp;
  /** Variables added to the child's environment. */
  env?: Record<string, string>;
  /** Run the child as this uid (and gid), through `setpriv` (tests of other users). */
  uid?: number;
}

/**
 * Runs `script` (path relative to the repo root) on `runtime` and waits for a line matching
 * `listening on <port>`. Rejects with the child's output when it exits or times out first.
 */
export function spawnScript(
  runtime: RuntimeName,
  script: string,
  options: SpawnOptions = {},
): Promise<Child> {
  const bin = runtimeBinary(runtime);
  const path = join(REPO_ROOT, script);
  const argv = runtime === "deno"
    ? ["run", "-A", "--config", join(REPO_ROOT, "deno.json"), path, ...(options.args ?? [])]
    : [path, ...(options.args ?? [])];
  const asUser = options.uid === undefined ? [] : [
    "--reuid",
    String(options.uid),
    "--regid",
    String(options.uid),
    "--clear-groups",
  ];
  const proc: ChildProcess = spawn(
    asUser.length ? "setpriv" : bin,
    asUser.length ? [...asUser, bin, ...argv] : argv,
    {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "pipe"],
      ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
    },
  );
  let out = "";
  // Exited once its output is read too: "close" comes after the last stdout/stderr chunk ("exit"
  // may come before it). A grandchild holding the pipes open must not hold this up: 1 s after
  // "exit" it resolves all the same.
  const exited = new Promise<number | string>((res) => {
    proc.on("close", (code, signal) => res(code ?? signal ?? "unknown"));
    proc.on("exit", (code, signal) => {
      setTimeout(() => res(code ?? signal ?? "unknown"), 1000);
    });
    proc.on("error", (e) => res(`spawn error: ${e.message}`));
  });
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise<Child>((resolvePort, reject) => {
    let done = false;
    const timer = setTimeout(() => fail(`no "listening on" line after ${timeoutMs} ms`), timeoutMs);
    const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited;
    };
    function fail(why: string) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      kill().then(() => reject(new Error(`${runtime} ${script}: ${why}\n--- output ---\n${out}`)));
    }
    const onChunk = (b: Uint8Array) => {
      out += new TextDecoder().decode(b);
      const m = (options.ready ?? /listening on (?:[\w.:[\]-]*:)?(\d+)/).exec(out);
      if (m && !done) {
        done = true;
        clearTimeout(timer);
        resolvePort({
          runtime,
          pid: proc.pid!,
          port: Number(m[1] ?? 0),
          output: () => out,
          exited,
          kill,
        });
      }
    };
    proc.stdout!.on("data", onChunk);
    proc.stderr!.on("data", onChunk);
    exited.then((code) => fail(`exited (${code}) before listening`));
  });
}

/** Spawns, runs `fn` with the child, and always kills the child afterwards. */
export async function withChild<T>(
  runtime: RuntimeName,
  script: string,
  options: SpawnOptions,
  fn: (child: Child) => Promise<T>,
): Promise<T> {
  const child = await spawnScript(runtime, script, options);
  try {
    return await fn(child);
  } finally {
    await stopGracefully(child);
  }
}

/**
 * SIGTERM, and SIGKILL if the child has not exited 5 s later: a `verbus serve` or agent stopped
 * so removes what it made (its record, its image directory), which a SIGKILL leaves behind.
 */
export async function stopGracefully(child: Child): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stopped = child.kill("SIGTERM");
  const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), 5000)));
  const how = await Promise.race([stopped.then(() => "done" as const), late]);
  clearTimeout(timer);
  if (how === "late") await child.kill("SIGKILL");
}
