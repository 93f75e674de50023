/**
 * `make example` (examples/greeter/run.sh) leaves nothing behind: after it ends — normally, or
 * stopped by SIGTERM while a server runs — none of its servers is alive and none of their
 * /dev/shm objects remains. (It once killed the subshell of a backgrounded shell function, not
 * the runtime: both servers stayed, adopted by init, each holding its notify page.)
 */
import { spawn, spawnSync } from "node:child_process";
import process from "node:process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { REPO_ROOT } from "../util/proc.ts";
import { hasEnv, isAlive, killAll, leftoverProcesses } from "../util/leftovers.ts";

const SCRIPT = join(REPO_ROOT, "examples/greeter/run.sh");

/** A marker in the script's environment, inherited by every process it starts. */
function marker(): [string, string] {
  return ["VERBUS_EXAMPLE_MARK", `${process.pid}-${Date.now()}-${Math.random()}`];
}

function env([k, v]: [string, string]): Record<string, string> {
  // The buf step rewrites gen/ in the tree and compares it with git: not a test's business.
  return { ...process.env, VERBUS_EXAMPLE_NO_GENERATE: "1", [k]: v } as Record<string, string>;
}

/** Server pids from the `listening on … (pid N)` lines. */
function serverPids(out: string): number[] {
  return [...out.matchAll(/greeter listening on \S+ \(pid (\d+)\)/g)].map((m) => Number(m[1]));
}

/** Processes still carrying the marker (the script's servers, wherever they were adopted). */
function marked([k, v]: [string, string]): number[] {
  return leftoverProcesses(-1, `${k}=${v}`).map((p) => p.pid);
}

function shmOf(pids: number[]): string[] {
  return readdirSync("/dev/shm").filter((n) => pids.some((p) => n.startsWith(`verbus-${p}-`)));
}

test(
  "make example: every server is stopped and waited for; no process, no shm object",
  async () => {
    const mark = marker();
    let pids: number[] = [];
    try {
      const r = spawnSync("bash", [SCRIPT], { env: env(mark), encoding: "utf8", timeout: 90_000 });
      const out = r.stdout + r.stderr;
      assertEquals(r.status, 0, out);
      pids = serverPids(out);
      assertEquals(pids.length, 2, out);
      for (const srv of ["deno", "bun"]) {
        for (const cli of ["deno", "bun"]) {
          assert(out.includes(`${cli} client of a ${srv} server!`), out);
        }
      }
      assertEquals(pids.filter(isAlive), [], "no server alive after the script");
      assertEquals(marked(mark), [], "no process of the script alive");
      assertEquals(shmOf(pids), [], "no /dev/shm object of its servers");
    } finally {
      await killAll([...pids.filter((p) => hasEnv(p, mark.join("="))), ...marked(mark)]);
    }
  },
  { timeoutMs: 120_000 },
);

test("make example stopped by SIGTERM while its server runs: the server goes too", async () => {
  const mark = marker();
  const sh = spawn("bash", [SCRIPT], { env: env(mark), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  sh.stdout!.on("data", (d) => (out += d));
  sh.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | string>((res) =>
    sh.on("exit", (code, signal) => res(code ?? signal ?? "?"))
  );
  let pids: number[] = [];
  try {
    for (let i = 0; i < 600 && serverPids(out).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    pids = serverPids(out);
    assertEquals(pids.length, 1, out);
    assert(isAlive(pids[0]), "the server runs");
    sh.kill("SIGTERM");
    // exit 143 from its TERM trap (Deno's child_process reports a 143 exit as "SIGTERM")
    const code = await exited;
    assert(code === 143 || code === "SIGTERM", `exit ${code}\n${out}`);
    assertEquals(pids.filter(isAlive), [], "the server was stopped with the script");
    assertEquals(marked(mark), [], "no process of the script alive");
    assertEquals(shmOf(pids), [], "no /dev/shm object of its server");
  } finally {
    sh.kill("SIGKILL");
    await killAll([...pids.filter((p) => hasEnv(p, mark.join("="))), ...marked(mark)]);
  }
}, { timeoutMs: 120_000 });
