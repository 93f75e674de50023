/**
 * The package a user installs: `npm pack` of this tree (its prepack builds the C helper, which
 * ships prebuilt in build/), installed into a fresh project of the runtime this suite runs on —
 * Bun: `bun add ./verbus-*.tgz`; Deno: the tarball unpacked as a workspace member (Deno runs no
 * TypeScript from node_modules and takes no tarball in `deno add`) — and a program there serving
 * and calling one ECHO over shm with the helper loaded from the package. Also the JSR layout:
 * `deno publish --dry-run` (no slow types in the public API). The npm registry is used only for
 * the package's dependencies (zod, @bufbuild/protobuf), from the local caches when they have them.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { VERSION } from "../../cli/version.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

const rt = RUNTIME as "deno" | "bun";

function run(cmd: string, args: string[], cwd: string, env?: Record<string, string>) {
  const g = globalThis as unknown as { process: { env: Record<string, string> } };
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    timeout: 180_000,
    env: { ...g.process.env, NO_COLOR: "1", ...env },
  });
  const what = `${cmd} ${args.join(" ")} (exit ${r.status}):\n${r.stdout}\n${r.stderr}`;
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "", what };
}

interface Packed {
  dir: string;
  tarball: string;
  files: string[];
}

let packed: Packed | undefined;
/** `npm pack` into a temp dir, once per process. */
function pack(): Packed {
  if (packed) return packed;
  const dir = mkdtempSync(join(tmpdir(), "verbus-pack-"));
  const r = run("npm", ["pack", "--json", "--pack-destination", dir], REPO_ROOT);
  assertEquals(r.code, 0, r.what);
  // the prepack script (make helper) prints on stdout before npm's JSON
  const info = JSON.parse(r.out.slice(r.out.indexOf("[\n")))[0];
  packed = {
    dir,
    tarball: join(dir, info.filename),
    files: info.files.map((f: { path: string }) => f.path),
  };
  return packed;
}

test("npm pack: sources, type entry points, the prebuilt helper; no tests or benches", () => {
  const p = pack();
  for (
    const f of [
      "package.json",
      "deno.json",
      "mod.ts",
      "cli/main.ts",
      "examples/demo/mod.ts",
      "bin/verbus",
      "build/libverbus_helper.so",
      "build/urma_sim/liburma.so.0",
      "c-helpers/Makefile",
      "ffi/bun_worker.ts",
    ]
  ) assert(p.files.includes(f), `${f} in the tarball`);
  for (const f of p.files) {
    assert(!/^(tests|bench|node_modules|scripts)\//.test(f), `${f} should not ship`);
  }
});

/** Copies the user's program and checks what it printed. */
function checkApp(out: string, helperDir: string) {
  const line = out.trim().split("\n").filter((l) => l.startsWith("{")).pop();
  assert(line, `no JSON line from the app:\n${out}`);
  const got = JSON.parse(line!);
  assertEquals([got.runtime, got.path, got.fabric, got.echoed], [rt, "EAGER", "shm", true], line);
  assertEquals([got.helper.source, got.helper.layoutOk], ["bundled", true], line);
  assertEquals(got.helper.path, join(helperDir, "build", "libverbus_helper.so"));
}

test(`installed from the tarball, a ${rt} project serves and calls over shm`, () => {
  const p = pack();
  const app = mkdtempSync(join(tmpdir(), `verbus-app-${rt}-`));
  try {
    copyFileSync(join(REPO_ROOT, "tests/pkg/fixtures/app.ts"), join(app, "app.ts"));
    const bin = runtimeBinary(rt);
    if (rt === "bun") {
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true }));
      const add = run(bin, ["add", "--prefer-offline", p.tarball], app);
      assertEquals(add.code, 0, add.what);
      const r = run(bin, ["app.ts"], app);
      assertEquals(r.code, 0, r.what);
      checkApp(r.out, join(app, "node_modules", "verbus"));
      const v = run(join(app, "node_modules/.bin/verbus"), ["--version"], app, { VERBUS_BUN: bin });
      assertEquals([v.code, v.out.split(" (")[0]], [0, `verbus ${VERSION}`], v.what);
      // Without its prebuilt helper the package says how to build it, and that command works.
      const pkg = join(app, "node_modules", "verbus");
      rmSync(join(pkg, "build", "libverbus_helper.so"));
      const doctor = () => run(bin, [join(pkg, "cli/main.ts"), "doctor"], app).out;
      const missing = doctor();
      assert(missing.includes("helper       NOT usable"), missing);
      const hint = /'(make -C \S+ OUT=\S+)'/.exec(missing);
      assert(hint, `a build command in:\n${missing}`);
      const make = run("sh", ["-c", hint![1]], app);
      assertEquals(make.code, 0, make.what);
      assert(doctor().includes(`loaded from ${join(pkg, "build", "libverbus_helper.so")}`));
    } else {
      mkdirSync(join(app, "vendor"));
      const x = run("tar", ["xzf", p.tarball, "-C", join(app, "vendor")], app);
      assertEquals(x.code, 0, x.what);
      renameSync(join(app, "vendor", "package"), join(app, "vendor", "verbus"));
      writeFileSync(
        join(app, "deno.json"),
        JSON.stringify({
          workspace: ["./vendor/verbus"],
          imports: { verbus: "jsr:@verbus/verbus@^" + VERSION },
        }),
      );
      const r = run(bin, ["run", "-A", "app.ts"], app);
      assertEquals(r.code, 0, r.what);
      checkApp(r.out, join(app, "vendor", "verbus"));
      const c = run(bin, ["check", "app.ts"], app);
      assertEquals(c.code, 0, c.what);
      const v = run(join(app, "vendor/verbus/bin/verbus"), ["--version"], app, {
        VERBUS_RUNTIME: "deno",
        VERBUS_DENO: bin,
      });
      assertEquals([v.code, v.out.split(" (")[0]], [0, `verbus ${VERSION}`], v.what);
    }
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}, { timeoutMs: 240_000 });

test("deno publish --dry-run: the JSR layout passes (no slow types)", () => {
  const r = run(runtimeBinary("deno"), ["publish", "--dry-run", "--allow-dirty"], REPO_ROOT);
  assertEquals(r.code, 0, r.what);
  assert(
    r.out.includes("Success Dry run complete") || r.err.includes("Success Dry run complete"),
    r.what,
  );
  assert(!r.err.includes("missing-explicit-type"), r.what);
}, { timeoutMs: 180_000, skip: rt === "deno" ? undefined : "checked once, in the Deno suite" });

test("cleanup of the packed tarball", () => {
  if (packed) rmSync(packed.dir, { recursive: true, force: true });
});
