/**
 * The single-file `verbus` binary stands alone: built by scripts/build_binary.sh (what
 * `make binary` runs), copied without anything else into an empty directory, it loads the
 * helper it carries from the per-user cache (`doctor --json`: source "embedded"), serves and
 * calls over shm (path EAGER), reuses an intact cached copy, rewrites a tampered one, and with a
 * cache directory of another user names every path it tried.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chownSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { assert, assertEquals, test } from "../harness.ts";
import { REPO_ROOT, runtimeBinary } from "../util/proc.ts";

function run(bin: string, args: string[], cwd: string, env: Record<string, string>) {
  const r = spawnSync(bin, args, {
    cwd,
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, ...env },
  });
  return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" };
}

function jsonLines(out: string): Record<string, unknown>[] {
  return out.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
}

/** Starts `bin serve --port 0 --json` and resolves with its port. */
function serve(bin: string, cwd: string, env: Record<string, string>) {
  const srv: ChildProcess = spawn(bin, ["serve", "--port", "0", "--json"], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const port = new Promise<number>((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`no port from the binary's serve:\n${out}`)),
      30_000,
    );
    const on = (d: Uint8Array) => {
      out += new TextDecoder().decode(d);
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        res(Number(m[1]));
      }
    };
    srv.stdout!.on("data", on);
    srv.stderr!.on("data", on);
    srv.on("exit", (c) => {
      clearTimeout(timer);
      rej(new Error(`the binary's serve exited ${c}:\n${out}`));
    });
  });
  return { srv, port, output: () => out };
}

test(
  "the compiled binary copied alone: doctor, serve and call over shm from the embedded helper",
  async () => {
    const work = mkdtempSync(join(tmpdir(), "verbus-binary-test-"));
    const srvRef: { srv?: ChildProcess } = {};
    try {
      const built = join(work, "out", "verbus");
      const b = spawnSync("bash", [join(REPO_ROOT, "scripts/build_binary.sh"), built], {
        cwd: REPO_ROOT,
        encoding: "utf8",
        timeout: 180_000,
        env: { ...process.env, BUN: runtimeBinary("bun") },
      });
      assertEquals(b.status, 0, b.stderr);
      // alone: an empty directory holding nothing but the binary, a cache of its own
      const alone = join(work, "alone");
      mkdirSync(alone);
      const bin = join(alone, "verbus");
      copyFileSync(built, bin);
      rmSync(join(work, "out"), { recursive: true });
      const cache = join(work, "cache");
      const env = { XDG_CACHE_HOME: cache, VERBUS_HOME: alone, VERBUS_HELPER: "" };

      const d = run(bin, ["doctor", "--json"], alone, env);
      assertEquals(d.code, 0, d.err);
      const helper = JSON.parse(d.out).helper;
      assertEquals([helper.found, helper.source, helper.layoutOk], [true, "embedded", true], d.out);
      assert(String(helper.path).startsWith(join(cache, "verbus") + "/"), helper.path);
      assertEquals(statSync(join(cache, "verbus")).mode & 0o777, 0o700);
      assertEquals(readdirSync(alone), ["verbus"], "nothing written beside the binary");

      const s = serve(bin, alone, env);
      srvRef.srv = s.srv;
      const port = await s.port;
      const c = run(
        bin,
        ["call", "--port", String(port), "--json", "--ping", "--large-get", "big:64k"],
        alone,
        env,
      );
      assertEquals(c.code, 0, c.err);
      assertEquals(
        jsonLines(c.out).map((l) => [l.op, l.ok, l.fabric, l.path]),
        [["ping", true, "shm", "EAGER"], ["large-get", true, "shm", "LAZY"]],
        c.out,
      );

      // an intact copy is reused as it is; a tampered one is rewritten before it is loaded
      const mtime = statSync(helper.path).mtimeMs;
      const again = JSON.parse(run(bin, ["doctor", "--json"], alone, env).out).helper;
      assertEquals([again.path, statSync(helper.path).mtimeMs], [helper.path, mtime]);
      writeFileSync(helper.path, "tampered");
      const fixed = JSON.parse(run(bin, ["doctor", "--json"], alone, env).out).helper;
      assertEquals([fixed.found, fixed.path, fixed.layoutOk], [true, helper.path, true]);

      // a build beside the binary comes first, and then nothing is written to the cache
      const beside = join(work, "beside");
      mkdirSync(join(beside, "build"), { recursive: true });
      copyFileSync(bin, join(beside, "verbus"));
      copyFileSync(
        join(REPO_ROOT, "build/libverbus_helper.so"),
        join(beside, "build/libverbus_helper.so"),
      );
      const fresh = join(work, "fresh-cache");
      const b2 = run(join(beside, "verbus"), ["doctor", "--json"], beside, {
        ...env,
        XDG_CACHE_HOME: fresh,
      });
      assertEquals(JSON.parse(b2.out).helper.source, "bundled", b2.out);
      assert(!existsSync(fresh), "no cache written when the bundled helper loads");

      // a cache directory of another user: refused, and the error lists every path tried
      if (process.getuid?.() === 0) {
        const theirs = join(work, "theirs");
        mkdirSync(join(theirs, "verbus"), { recursive: true, mode: 0o700 });
        chownSync(join(theirs, "verbus"), 65534, 65534);
        const r = run(bin, ["doctor", "--json"], alone, { ...env, XDG_CACHE_HOME: theirs });
        const h = JSON.parse(r.out).helper;
        assertEquals(h.found, false, r.out);
        const tried = h.tried.map((t: { source: string }) => t.source);
        assert(
          tried.includes("bundled") && tried.includes("embedded") && tried.includes("system"),
          r.out,
        );
        assert(
          h.tried.some((t: { reason: string }) => t.reason.includes("belongs to uid 65534")),
          r.out,
        );
        assert(!r.out.includes("$bunfs"), `no path inside the binary in the hint: ${r.out}`);
      }
    } finally {
      srvRef.srv?.kill("SIGTERM");
      rmSync(work, { recursive: true, force: true });
    }
  },
  { timeoutMs: 240_000 },
);
