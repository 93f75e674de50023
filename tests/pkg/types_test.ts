/**
 * A new user's compiler: the packed tarball installed into a fresh `bun init -y` project and a
 * fresh `deno init --empty` project, each type-checking fixtures/typed_app.ts (connect, serve,
 * createVerbusTransport for a client protoc-gen-es generated, the error classes) under the
 * template's own settings — Bun's has `strict` and `noUncheckedIndexedAccess`, which verbus's
 * sources fail, so the npm package must give declarations. 0 errors in each. The Deno project
 * also shows that nothing warns about verbus's deno.json and that its lock file gets verbus's
 * runtime dependencies only (no development tools). Both runtimes are used, so it runs once, in
 * the Bun suite. The npm registry is reached only for what the caches lack (bun init's
 * @types/bun and typescript; zod, @bufbuild/protobuf, @connectrpc/connect).
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";
import {
  denoProject,
  pack,
  projectDir,
  type Ran,
  releasePack,
  runOk,
  runtimesOnPath,
} from "./pack_util.ts";

const skip = RUNTIME === "bun" ? undefined : "checked once, in the Bun suite (it runs both)";
const FIXTURE = join(REPO_ROOT, "tests/pkg/fixtures/typed_app.ts");
const GENERATED = join(REPO_ROOT, "examples/greeter/gen/greeter/v1/greeter_pb.ts");
/** What verbus needs at run time (dependencies and peers); the lock may hold these only. */
const RUNTIME_DEPS = ["zod", "@bufbuild/protobuf", "@connectrpc/connect"];

/** The user's program and the code protoc-gen-es generated for it, into `app`. */
function copyProgram(app: string): void {
  copyFileSync(FIXTURE, join(app, "typed_app.ts"));
  mkdirSync(join(app, "gen"));
  copyFileSync(GENERATED, join(app, "gen", "greeter_pb.ts"));
}

/** verbus's devDependencies that are not also what it needs at run time. */
function devOnly(): string[] {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8"));
  return Object.keys(pkg.devDependencies).filter((d) => !RUNTIME_DEPS.includes(d));
}

/** The packages a bun.lock resolves (the keys of its "packages" table). */
function bunLocked(app: string): Set<string> {
  const lock = readFileSync(join(app, "bun.lock"), "utf8");
  return new Set([...lock.matchAll(/^ {4}"([^"]+)": \[/gm)].map((m) => m[1]!));
}

/** No diagnostic in tsc's / bun check's form (`error TS2322`) or Deno's (`TS2322 [ERROR]`). */
function noErrors(r: Ran): void {
  assert(!/error TS\d+|TS\d+ \[ERROR\]/.test(r.out + r.err), r.what);
}

test("a fresh bun init project type-checks a program using verbus: 0 errors", () => {
  const p = pack();
  const app = projectDir("types-bun");
  try {
    const env = runtimesOnPath(app);
    const bun = runtimeBinary("bun");
    runOk(bun, ["init", "-y"], app, env);
    const tsconfig = readFileSync(join(app, "tsconfig.json"), "utf8");
    assert(/"noUncheckedIndexedAccess": true/.test(tsconfig), `bun init's settings:\n${tsconfig}`);
    const before = bunLocked(app);
    runOk(bun, ["add", "--prefer-offline", p.tarball], app, env);
    // the peers came with it, one copy each
    for (const dep of ["@bufbuild/protobuf", "@connectrpc/connect"]) {
      assert(existsSync(join(app, "node_modules", dep, "package.json")), `${dep} installed`);
    }
    // what bun add put in bun.lock: verbus, its dependencies and peers, no devDependency
    const added = [...bunLocked(app)].filter((name) => !before.has(name)).sort();
    assertEquals(added, ["verbus", ...RUNTIME_DEPS].sort());
    copyProgram(app);
    // the template's own script (bun check), and tsc as a user's CI would run it
    noErrors(runOk(bun, ["run", "typecheck"], app, env));
    const tsc = join(app, "node_modules/.bin/tsc");
    noErrors(runOk(tsc, ["--noEmit", "-p", "."], app, env));
    // stricter than the template, declarations checked too (HeadersInit is the dom lib's)
    const strictest = ["--exactOptionalPropertyTypes", "--noPropertyAccessFromIndexSignature"];
    const libCheck = ["--skipLibCheck", "false", "--lib", "esnext,dom"];
    noErrors(runOk(tsc, ["--noEmit", "-p", ".", ...strictest, ...libCheck], app, env));
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}, { timeoutMs: 240_000, skip });

test("a fresh deno init project: 0 errors, no warning, only runtime dependencies locked", () => {
  const p = pack();
  const app = projectDir("types-deno");
  try {
    const deno = runtimeBinary("deno");
    runOk(deno, ["init", "--empty"], app);
    denoProject(app, p.tarball, {
      "@bufbuild/protobuf": "npm:@bufbuild/protobuf@2.17.0",
      "@connectrpc/connect": "npm:@connectrpc/connect@2.2.0",
    });
    copyProgram(app);
    const check = runOk(deno, ["check", "typed_app.ts"], app);
    noErrors(check);
    assert(!/warning/i.test(check.err), check.what);
    const install = runOk(deno, ["install"], app);
    assert(!/warning/i.test(install.err), install.what);
    const lock = JSON.parse(readFileSync(join(app, "deno.lock"), "utf8"));
    const names = Object.keys(lock.npm ?? {}).map((k) => k.slice(0, k.indexOf("@", 1)));
    assertEquals([...new Set(names)].sort(), [...RUNTIME_DEPS].sort(), JSON.stringify(lock));
    // what was resolved (the links section only repeats verbus's package.json, optional peers too)
    const resolved = Object.keys(lock.specifiers ?? {}).join(" ");
    for (const dev of devOnly()) {
      assert(!resolved.includes(`npm:${dev}@`), `devDependency ${dev} resolved: ${resolved}`);
    }
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}, { timeoutMs: 240_000, skip });

test("cleanup of the packed tarball", () => {
  releasePack();
});
