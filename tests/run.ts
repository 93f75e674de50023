/**
 * The test runner, identical on Deno and Bun:
 *
 *   deno run -A tests/run.ts [--filter S] [--report FILE] [files...]
 *   bun tests/run.ts         [--filter S] [--report FILE] [files...]
 *
 * Without files it runs every `tests/**\/*_test.ts` except `tests/vm/` (those run inside the
 * Soft-RoCE VM through `tests/vm/run.sh`). Prints one line per test and ends with
 * `<runtime>: N passed, N failed, N skipped`; `--report` also writes that as JSON.
 * @module
 */
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { registeredTests, setCurrentFile } from "./harness.ts";
import { RUNTIME } from "../ffi/runtime.ts";
import { removeStaleShmObjects } from "../transport/shm/shm_object.ts";

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
  try {
    await Promise.race([
      Promise.resolve().then(t.fn),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs);
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
