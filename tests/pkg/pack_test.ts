/**
 * The package a user installs: `npm pack` of this tree (its prepack builds the C helper, which
 * ships prebuilt in build/, and the type declarations), installed into a fresh project of the
 * runtime this suite runs on — Bun: `bun add ./verbus-*.tgz`; Deno: the tarball unpacked and
 * linked as jsr:@verbus/verbus (Deno runs no TypeScript from node_modules and takes no tarball in
 * `deno add`) — and a program there serving and calling one ECHO over shm with the helper loaded
 * from the package; the installed `verbus` command on both runtimes. Also the JSR layout:
 * `deno publish --dry-run` in a clean clone after `npm pack` left its tarball there. The npm
 * registry is used only for the package's dependencies, from the local caches when they have them.
 * (Type-checking a user's program: types_test.ts.)
 */
import { copyFileSync, cpSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { VERSION } from "../../cli/version.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";
import { denoProject, pack, projectDir, releasePack, run, runOk } from "./pack_util.ts";

const rt = RUNTIME as "deno" | "bun";

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
      "build/types/mod.d.ts",
      "build/types/cli/main.d.ts",
      "build/types/examples/demo/mod.d.ts",
      "bin/deno_cli.json",
      "LICENSE",
      "CHANGELOG.md",
    ]
  ) assert(p.files.includes(f), `${f} in the tarball`);
  for (const f of p.files) {
    assert(!/^(tests|bench|node_modules|scripts)\//.test(f), `${f} should not ship`);
    assert(f !== "build/deno_types.d.ts", "the Deno namespace used to emit the declarations");
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
  const app = projectDir(`app-${rt}`);
  try {
    copyFileSync(join(REPO_ROOT, "tests/pkg/fixtures/app.ts"), join(app, "app.ts"));
    const bin = runtimeBinary(rt);
    const versionOf = (r: { out: string }) => r.out.split(" (")[0];
    if (rt === "bun") {
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true }));
      runOk(bin, ["add", "--prefer-offline", p.tarball], app);
      const r = runOk(bin, ["app.ts"], app);
      checkApp(r.out, join(app, "node_modules", "verbus"));
      const cli = join(app, "node_modules/.bin/verbus");
      const v = runOk(cli, ["--version"], app, { VERBUS_BUN: bin });
      assertEquals(versionOf(v), `verbus ${VERSION}`, v.what);
      // The README's Deno route for the installed command: Deno runs no TypeScript from
      // node_modules, so the shim runs the package through its own JSR link.
      const d = runOk(cli, ["doctor"], app, {
        VERBUS_RUNTIME: "deno",
        VERBUS_DENO: runtimeBinary("deno"),
      });
      assert(d.out.startsWith("runtime      deno "), d.what);
      assert(d.out.includes(`loaded from ${join(app, "node_modules/verbus/build")}`), d.what);
      // Without its prebuilt helper the package says how to build it, and that command works.
      const pkg = join(app, "node_modules", "verbus");
      rmSync(join(pkg, "build", "libverbus_helper.so"));
      const doctor = () => run(bin, [join(pkg, "cli/main.ts"), "doctor"], app).out;
      const missing = doctor();
      assert(missing.includes("helper       NOT usable"), missing);
      const hint = /'(make -C \S+ OUT=\S+)'/.exec(missing);
      assert(hint, `a build command in:\n${missing}`);
      runOk("sh", ["-c", hint![1]], app);
      assert(doctor().includes(`loaded from ${join(pkg, "build", "libverbus_helper.so")}`));
    } else {
      const pkg = denoProject(app, p.tarball);
      const r = runOk(bin, ["run", "-A", "app.ts"], app);
      checkApp(r.out, pkg);
      assert(!r.err.includes("nodeModulesDir"), r.what);
      const c = runOk(bin, ["check", "app.ts"], app);
      assert(!c.err.includes("Warning"), c.what);
      // the CLI of the project's copy: the shim, and the module the README names
      const env = { VERBUS_RUNTIME: "deno", VERBUS_DENO: bin };
      const v = runOk(join(pkg, "bin/verbus"), ["--version"], app, env);
      assertEquals(versionOf(v), `verbus ${VERSION}`, v.what);
      const d = runOk(bin, ["run", "-A", "jsr:@verbus/verbus/cli", "doctor"], app);
      assert(d.out.includes(`loaded from ${join(pkg, "build")}`), d.what);
      assert(!d.err.includes("Warning"), d.what);
    }
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}, { timeoutMs: 240_000 });

/** The files git would hand a clean clone: tracked and new, not ignored (working-tree versions). */
function cleanCopy(to: string): void {
  const ls = runOk(
    "git",
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
    REPO_ROOT,
  );
  for (const f of ls.out.split("\0").filter((f) => f)) {
    mkdirSync(join(to, dirname(f)), { recursive: true });
    try {
      cpSync(join(REPO_ROOT, f), join(to, f));
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e; // deleted, not yet committed
    }
  }
}

test("deno publish --dry-run in a clean clone, after npm pack left its tarball there", () => {
  const p = pack();
  const repo = projectDir("publish");
  try {
    cleanCopy(repo);
    runOk("git", ["init", "-q"], repo);
    runOk("git", ["add", "."], repo);
    runOk("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "clean"], repo);
    // as `npm pack` leaves it; node_modules as `make setup` leaves it (ignored, both)
    copyFileSync(p.tarball, join(repo, `verbus-${VERSION}.tgz`));
    symlinkSync(join(REPO_ROOT, "node_modules"), join(repo, "node_modules"));
    const r = runOk(runtimeBinary("deno"), ["publish", "--dry-run"], repo);
    assert((r.out + r.err).includes("Success Dry run complete"), r.what);
    assert(!r.err.includes("missing-explicit-type"), r.what);
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
}, { timeoutMs: 180_000, skip: rt === "deno" ? undefined : "checked once, in the Deno suite" });

test("cleanup of the packed tarball", () => {
  releasePack();
});
