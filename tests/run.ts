/**
 * The test runner, identical on Deno and Bun:
 *
 *   deno run -A tests/run.ts [--filter S] [--report FILE] [files...]
 *   bun tests/run.ts         [--filter S] [--report FILE] [files...]
 *
 * Without files it runs every `tests/**\/*_test.ts` except `tests/vm/` (those run inside the
 * Soft-RoCE VM through `tests/vm/run.sh`). Prints one line per test and ends with
 * `<runtime>: N passed, N failed, N skipped`; `--report` also writes that as JSON.
 *
 * Nothing left behind: the run gets a private temp directory (`TMPDIR`, inherited by every child)
 * and marks its children's environment with `VERBUS_TEST_RUNNER=<pid>`. A test that times out
 * does not run its `finally`, so the processes it started are killed after it. After the run,
 * a process the suite started that is still alive or an entry left in the private temp directory
 * each count as a failure (and are removed); new `/tmp/verbus-*` / `/tmp/vb-*` entries are named.
 * @module
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { registeredTests, setCurrentFile } from "./harness.ts";
import { RUNTIME } from "../ffi/runtime.ts";
import { removeStaleShmObjects } from "../transport/shm/shm_object.ts";
import { added, entriesOf, killAll, leftoverProcesses } from "./util/leftovers.ts";

const args = [
  ...(RUNTIME === "deno"
    // deno-lint-ignore no-explicit-any
    ? (globalThis as any).Deno.args
    // deno-lint-ignore no-explicit-any
    : (globalThis as any).process.argv.slice(2)),
] as string[];

let filter = "";
let report = "";
const files: string[] = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--filter") filter = args[++i] ?? "";
  else if (args[i] === "--report") report = args[++i] ?? "";
  else files.push(resolve(args[i]));
}

const root = resolve(new URL(".", import.meta.url).pathname);
function discover(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "vm" && name !== "fixtures") out.push(...discover(p));
    } else if (name.endsWith("_test.ts")) out.push(p);
  }
  return out;
}
if (files.length === 0) files.push(...discover(root));

// deno-lint-ignore no-explicit-any
const proc = (globalThis as any).process;
const RUNNER_PID: number = proc.pid;
const MARKER_NAME = "VERBUS_TEST_RUNNER";
// Set before any test file loads (some make temp dirs or children at import time). On Bun a child
// spawned with an explicit `env` or through Bun.spawn may not inherit these: the ancestry scan and
// the /tmp comparison cover those.
const SYSTEM_TMP = tmpdir();
const TEMP_PATTERN = /^(verbus|vb)[-_.]/;
const RUN_TMP = mkdtempSync(join(SYSTEM_TMP, "vb-run-"));
// Like /tmp (sticky, everyone may write): some tests run children as another uid.
chmodSync(RUN_TMP, 0o1777);
const tmpBefore = entriesOf(SYSTEM_TMP, TEMP_PATTERN);
proc.env[MARKER_NAME] = String(RUNNER_PID);
proc.env.TMPDIR = RUN_TMP;
const MARKER = `${MARKER_NAME}=${RUNNER_PID}`;

/** The processes this run started that are alive now. */
function ourProcesses() {
  return leftoverProcesses(RUNNER_PID, MARKER);
}

for (const f of files) {
  setCurrentFile(relative(root, f));
  await import(f);
}

let passed = 0, failed = 0, skipped = 0;
const failures: string[] = [];
const t0 = performance.now();
for (const t of registeredTests()) {
  const label = `${t.file} › ${t.name}`;
  if (filter && !label.includes(filter)) continue;
  if (t.options.skip) {
    skipped++;
    console.log(`skip ${label} (${t.options.skip})`);
    continue;
  }
  const start = performance.now();
  const timeoutMs = t.options.timeoutMs ?? 30_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  try {
    await Promise.race([
      Promise.resolve().then(t.fn),
      new Promise((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(new Error(`timed out after ${timeoutMs} ms`));
        }, timeoutMs);
      }),
    ]);
    passed++;
    console.log(`ok   ${label} (${(performance.now() - start).toFixed(0)} ms)`);
  } catch (e) {
    failed++;
    failures.push(label);
    const detail = e instanceof Error ? (e.stack ?? e.message) : String(e);
    console.log(
      `FAIL ${label} (${(performance.now() - start).toFixed(0)} ms)\n     ${
        detail.split("\n").join("\n     ")
      }`,
    );
  } finally {
    clearTimeout(timer);
  }
  if (timedOut) {
    // The test's own `finally` never ran: its children (and theirs) would outlive the run.
    const left = ourProcesses();
    if (left.length) {
      console.log(`     killed ${left.length} process(es) the timed-out test left:`);
      for (const p of left) console.log(`       ${p.pid} ${p.cmdline}`);
      await killAll(left.map((p) => p.pid));
    }
  }
}

/** Counts one post-suite finding as a failure and prints it with its details. */
function leftBehind(what: string, details: string[]): void {
  failed++;
  failures.push(`post-suite check: ${what}`);
  console.log(`FAIL post-suite check: ${what}\n     ${details.join("\n     ")}`);
}
// A child killed in a test's `finally` may still be exiting: give stragglers a moment.
let stray = ourProcesses();
for (let i = 0; i < 50 && stray.length > 0; i++) {
  await new Promise((r) => setTimeout(r, 40));
  stray = ourProcesses();
}
if (stray.length) {
  leftBehind(
    `${stray.length} process(es) the suite started are still alive (killed now)`,
    stray.map((p) => `${p.pid} (parent ${p.ppid}) ${p.cmdline}`),
  );
  await killAll(stray.map((p) => p.pid));
}
const inRunTmp = [...entriesOf(RUN_TMP)].sort();
if (inRunTmp.length) {
  leftBehind(`${inRunTmp.length} temp entries left in ${RUN_TMP} (removed now)`, inRunTmp);
}
rmSync(RUN_TMP, { recursive: true, force: true });
// New /tmp entries are named, not counted: other processes (another run, someone's `verbus
// serve`) make them too, and /tmp does not say who made what. What this run's children made
// through tmpdir() / mktemp is in RUN_TMP, checked above.
const inTmp = added(tmpBefore, entriesOf(SYSTEM_TMP, TEMP_PATTERN))
  .filter((n) => !n.startsWith("vb-run-"));
if (inTmp.length) {
  console.log(
    `note: ${inTmp.length} new ${SYSTEM_TMP} entries during the run (this run's, or another ` +
      `process's):\n     ${inTmp.map((n) => join(SYSTEM_TMP, n)).join("\n     ")}`,
  );
}
const secs = ((performance.now() - t0) / 1000).toFixed(1);
if (failures.length) console.log(`\nfailed:\n  ${failures.join("\n  ")}`);
if (report) {
  writeFileSync(
    report,
    JSON.stringify({ runtime: RUNTIME, passed, failed, skipped, failures }) + "\n",
  );
}
// Tests kill their children with SIGKILL (tests/util/proc.ts), which leaves each child's notify
// page in /dev/shm for the next server's start-up sweep: sweep now, so a run leaves none.
const swept = await removeStaleShmObjects();
if (swept.length) console.log(`removed ${swept.length} shm objects of killed test processes`);
console.log(`${RUNTIME}: ${passed} passed, ${failed} failed, ${skipped} skipped (${secs} s)`);
// deno-lint-ignore no-explicit-any
const g = globalThis as any;
const code = failed > 0 ? 1 : 0;
if (RUNTIME === "deno") g.Deno.exit(code);
else g.process.exit(code);
