/**
 * What the package tests share: running a command, `npm pack` of this tree once per process
 * (into a temp dir, never into the checkout), a fresh project of each runtime installed the way
 * the README says, and a directory with `bun` and `deno` to put on a project's PATH.
 * Synchronous throughout (child processes of the test, waited for).
 */
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertEquals } from "../harness.ts";
import { VERSION } from "../../cli/version.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

/** What a finished command gave; `what` quotes it all for an assertion message. */
export interface Ran {
  code: number | null;
  out: string;
  err: string;
  what: string;
}

/** Runs `cmd` to its end (3 minutes at most) in `cwd`, with NO_COLOR and `env` added. */
export function run(cmd: string, args: string[], cwd: string, env?: Record<string, string>): Ran {
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

/** Runs a command that must succeed; returns what it printed. */
export function runOk(cmd: string, args: string[], cwd: string, env?: Record<string, string>): Ran {
  const r = run(cmd, args, cwd, env);
  assertEquals(r.code, 0, r.what);
  return r;
}

/** The tarball `npm pack` made and the paths it holds. */
export interface Packed {
  dir: string;
  tarball: string;
  files: string[];
}

let packed: Packed | undefined;

/**
 * `npm pack` (its prepack builds the helper and the declarations) into a temp dir, once. Under
 * a lock on build/.pack.lock: suites running at once would otherwise rebuild build/types while
 * another npm reads it.
 */
export function pack(): Packed {
  if (packed) return packed;
  const dir = mkdtempSync(join(tmpdir(), "verbus-pack-"));
  mkdirSync(join(REPO_ROOT, "build"), { recursive: true });
  const lock = join(REPO_ROOT, "build", ".pack.lock");
  const npm = ["npm", "pack", "--json", "--pack-destination", dir];
  const r = runOk("flock", [lock, ...npm], REPO_ROOT);
  // the prepack script (make helper types) prints on stdout before npm's JSON
  const info = JSON.parse(r.out.slice(r.out.indexOf("[\n")))[0];
  packed = {
    dir,
    tarball: join(dir, info.filename),
    files: info.files.map((f: { path: string }) => f.path),
  };
  return packed;
}

/** Removes the tarball (a later pack() packs again). */
export function releasePack(): void {
  if (packed) rmSync(packed.dir, { recursive: true, force: true });
  packed = undefined;
}

/** A fresh temp directory for a project; the caller removes it. */
export function projectDir(label: string): string {
  return mkdtempSync(join(tmpdir(), `verbus-${label}-`));
}

/** A directory holding only `bun` and `deno` (the checkout's), for a project's PATH. */
export function runtimesOnPath(project: string): Record<string, string> {
  const bin = join(project, ".runtimes");
  mkdirSync(bin);
  symlinkSync(runtimeBinary("bun"), join(bin, "bun"));
  symlinkSync(runtimeBinary("deno"), join(bin, "deno"));
  const g = globalThis as unknown as { process: { env: Record<string, string> } };
  return { PATH: `${bin}:${g.process.env.PATH ?? ""}` };
}

/**
 * The README's Deno route in `project`: the tarball unpacked to vendor/verbus and linked as
 * jsr:@verbus/verbus, imported as "verbus" (plus `imports`), added to the project's deno.json
 * (made if there is none). Returns the package directory.
 */
export function denoProject(
  project: string,
  tarball: string,
  imports: Record<string, string> = {},
): string {
  mkdirSync(join(project, "vendor"), { recursive: true });
  runOk("tar", ["xzf", tarball, "-C", join(project, "vendor")], project);
  const pkg = join(project, "vendor", "verbus");
  renameSync(join(project, "vendor", "package"), pkg);
  const file = join(project, "deno.json");
  const config = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : {};
  config.links = [...(config.links ?? []), "./vendor/verbus"];
  config.imports = { ...config.imports, verbus: `jsr:@verbus/verbus@^${VERSION}`, ...imports };
  writeFileSync(file, JSON.stringify(config, null, 2));
  return pkg;
}
