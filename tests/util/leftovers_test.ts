/**
 * util/leftovers.ts and the runner's post-suite check: a suite that leaves a child, an orphan, a
 * temp directory, or times out with a child running fails the run, names each, and leaves none
 * of them behind.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "./proc.ts";
import { added, entriesOf, hasEnv, isAlive, killAll, leftoverProcesses } from "./leftovers.ts";

// deno-lint-ignore no-explicit-any
const proc = (globalThis as any).process;

test("leftoverProcesses finds children, grandchildren and marked orphans; killAll ends them", async () => {
  const mark = `VB_LEFTOVER_MARK=${proc.pid}-${Date.now()}`;
  const [k, v] = mark.split("=");
  const env = { ...proc.env, [k]: v };
  const child = spawn("sleep", ["30"], { stdio: "ignore", env });
  // The shell exits at once: its sleep is adopted by init, reachable only through the marker.
  const orphan = Number(
    spawnSync("sh", ["-c", "sleep 30 >/dev/null 2>&1 & echo $!"], { encoding: "utf8", env })
      .stdout.trim(),
  );
  try {
    assert(isAlive(child.pid!) && isAlive(orphan), "both sleeping");
    assert(hasEnv(orphan, mark), "the orphan keeps the marker in its environment");
    const byAncestry = leftoverProcesses(proc.pid).map((p) => p.pid);
    assert(byAncestry.includes(child.pid!), `child ${child.pid} in ${byAncestry}`);
    assert(!byAncestry.includes(orphan), "an orphan's ancestry no longer leads here");
    const both = leftoverProcesses(proc.pid, mark);
    const pids = both.map((p) => p.pid);
    assert(pids.includes(child.pid!) && pids.includes(orphan), String(pids));
    assert(!pids.includes(proc.pid), "never the root itself");
    assert(both.find((p) => p.pid === orphan)!.cmdline.startsWith("sleep 30"), "its command line");
    assertEquals(await killAll([child.pid!, orphan]), []);
    assertEquals([isAlive(child.pid!), isAlive(orphan)], [false, false]);
    assertEquals(
      leftoverProcesses(proc.pid, mark).map((p) => p.pid).filter((p) =>
        p === child.pid || p === orphan
      ),
      [],
    );
  } finally {
    await killAll([child.pid!, orphan].filter((p) => p > 0));
  }
});

test("entriesOf / added: what a directory gained", () => {
  const dir = mkdtempSync(join(tmpdir(), "verbus-entries-"));
  try {
    mkdirSync(join(dir, "verbus-a"));
    const before = entriesOf(dir, /^verbus-/);
    mkdirSync(join(dir, "verbus-b"));
    mkdirSync(join(dir, "other"));
    assertEquals(added(before, entriesOf(dir, /^verbus-/)), ["verbus-b"]);
    assertEquals(entriesOf(join(dir, "missing")).size, 0);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test(
  "the runner fails a suite that leaves a process, an orphan or a temp dir, and removes them",
  async () => {
    const bin = runtimeBinary(RUNTIME as "deno" | "bun");
    const fixture = join(REPO_ROOT, "tests/fixtures/leaky_suite.ts");
    const runner = join(REPO_ROOT, "tests/run.ts");
    const argv = RUNTIME === "deno" ? ["run", "-A", runner, fixture] : [runner, fixture];
    const r = spawnSync(bin, argv, { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });
    const out = r.stdout + r.stderr;
    const pid = (what: string) => Number(new RegExp(`leaky: ${what} (\\d+)`).exec(out)?.[1]);
    const [child, orphan, late] = [pid("child"), pid("orphan"), pid("timed-out child")];
    const dir = /leaky: dir (\S+)/.exec(out)?.[1];
    try {
      assertEquals(r.status, 1, out);
      assert(child > 0 && orphan > 0 && late > 0 && dir !== undefined, out);
      assert(
        /FAIL .*times out with a child[^\n]*\n\s+Error: timed out after 300 ms/.test(out),
        out,
      );
      assert(
        new RegExp(`killed 1 process\\(es\\) the timed-out test left:\\n\\s+${late} \\S*sleep 60`)
          .test(out),
        out,
      );
      const procs =
        /FAIL post-suite check: 2 process\(es\) the suite started[^\n]*\n((?:\s+\d+.*\n)+)/
          .exec(out);
      assert(procs, out);
      assert(
        procs[1].includes(`${child} (parent `) && procs[1].includes(`${orphan} (parent `),
        out,
      );
      assert(/FAIL post-suite check: 1 temp entries left in \S+ \(removed now\)/.test(out), out);
      assert(out.includes("verbus-leaky-"), out);
      assert(/(deno|bun): 3 passed, 3 failed, 0 skipped/.test(out), out);
      assertEquals([isAlive(child), isAlive(orphan), isAlive(late)], [false, false, false]);
      assert(!existsSync(dir), `${dir} removed`);
    } finally {
      await killAll([child, orphan, late].filter((p) => p > 0));
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  },
  { timeoutMs: 90_000 },
);
