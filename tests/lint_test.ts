/**
 * The tree passes `deno lint` (the rules of deno.json) and its TypeScript is as `deno fmt` writes
 * it, checked on every run: an unused import, a value import used only as a type, or an
 * unformatted file fails here naming the file, instead of piling up until someone runs the tools.
 * Markdown, JSON and the code protoc-gen-es generates (`examples/greeter/gen/`) are left out of the
 * format check: results tables are written by scripts, generated code as its generator writes it.
 *
 * Both checks run `deno` (the runtime binary `tests/util/proc.ts` finds), under either runtime.
 * @module
 */
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";
import { assert, test } from "./harness.ts";
import { REPO_ROOT, runtimeBinary } from "./util/proc.ts";

/** Top-level folders and files whose TypeScript the format check covers. */
const FORMATTED = [
  "ffi",
  "transport",
  "rpc",
  "util",
  "cli",
  "tests",
  "bench",
  "scripts",
  "examples",
  "mod.ts",
  "errors.ts",
];
/** Paths (relative to the root) the format check skips. */
const NOT_FORMATTED = ["examples/greeter/gen"];

/** Every `.ts` file under `paths` (relative to the root), skipping {@link NOT_FORMATTED}. */
function tsFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    if (NOT_FORMATTED.some((p) => rel === p || rel.startsWith(p + "/"))) return;
    const abs = join(REPO_ROOT, rel);
    let st;
    try {
      st = statSync(abs);
    } catch {
      return; // absent in this checkout
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(abs)) if (name !== "node_modules") walk(join(rel, name));
    } else if (rel.endsWith(".ts")) out.push(rel);
  };
  for (const p of paths) walk(p);
  return out;
}

/** Runs deno with `args` in the root; its exit code and output with colour codes removed. */
function deno(args: string[]): { code: number | null; output: string } {
  const r = spawnSync(runtimeBinary("deno"), args, {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
    maxBuffer: 64 * 1024 * 1024,
  });
  // deno-lint-ignore no-control-regex
  const output = `${r.stdout ?? ""}${r.stderr ?? ""}`.replace(/\x1b\[[0-9;]*m/g, "");
  return { code: r.status, output };
}

test("lint: deno lint finds no problem in the tree", () => {
  const { code, output } = deno(["lint"]);
  assert(code === 0, `deno lint failed (exit ${code}):\n${output.slice(0, 8000)}`);
});

test("lint: every TypeScript file is as deno fmt writes it", () => {
  const files = tsFiles(FORMATTED);
  assert(files.length > 100, `found only ${files.length} .ts files under ${REPO_ROOT}`);
  const { code, output } = deno(["fmt", "--check", ...files]);
  const bad = [...output.matchAll(/^from (.+):$/gm)].map((m) => relative(REPO_ROOT, m[1]));
  assert(
    code === 0,
    `deno fmt --check: ${bad.length} file(s) not formatted (run deno fmt on them): ${
      bad.join(", ") || output.slice(0, 4000)
    }`,
  );
});
