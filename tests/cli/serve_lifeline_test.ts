/**
 * `verbus bench` starts `verbus serve --port 0 --json` for its cells. Killed outright (SIGKILL:
 * no handler runs), it used to leave that server running for good (one was seen 17 minutes
 * later). The server now holds the bench's pipe as its stdin (`--exit-with-stdin`) and stops
 * gracefully when the pipe closes, however the bench ended.
 * @module
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { assert, test } from "../harness.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

/** The direct children of `pid` (empty once it is gone). */
function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/)
      .filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** True while `pid` runs (a zombie has no exe). */
function alive(pid: number): boolean {
  try {
    readFileSync(`/proc/${pid}/cmdline`);
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("verbus bench killed with SIGKILL: the server it started stops too", async () => {
  const rt = RUNTIME as RuntimeName;
  const main = `${REPO_ROOT}/cli/main.ts`;
  const args = [
    ...(rt === "deno" ? ["run", "-A", main] : [main]),
    "bench",
    "--fabrics",
    "shm",
    "--paths",
    "eager",
    "--inflight",
    "1",
    "--clients",
    "1",
    "--duration",
    "30",
  ];
  const bench = spawn(runtimeBinary(rt), args, {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  bench.stderr!.on("data", (d) => (err += d));
  let serve = 0;
  try {
    await until(() => /started verbus serve/.test(err), 60_000, `the bench's server: ${err}`);
    const serves = children(bench.pid!).filter((p) =>
      readFileSync(`/proc/${p}/cmdline`, "utf8").includes("serve")
    );
    assert(serves.length === 1, `one serve child: ${serves} (${err})`);
    serve = serves[0];
    bench.kill("SIGKILL");
    await until(() => !alive(serve), 15_000, `serve (pid ${serve}) to stop after the bench died`);
  } finally {
    bench.kill("SIGKILL");
    if (serve && alive(serve)) process.kill(serve, "SIGKILL");
  }
}, { timeoutMs: 120_000 });
