/**
 * The logger with levels (util/log.ts): lines below the level are dropped, `VERBUS_LOG_LEVEL`
 * decides over the default, JSON lines under `json`; the library says nothing below `warn` by
 * default (a fabric this host cannot offer is info), while `verbus serve` shows it — as one JSON
 * object per stderr line under `--json`, as text otherwise.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { cliLogger, createLogger, effectiveLevel, libraryLogger } from "../../util/log.ts";
import { RUNTIME } from "../../util/runtime.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { REPO_ROOT, runtimeBinary, withChild } from "./proc.ts";

function capture(options: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  const log = createLogger({ ...options, write: (l) => lines.push(l) });
  return { log, lines };
}

function withEnv<T>(name: string, value: string | undefined, fn: () => T): T {
  const old = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return fn();
  } finally {
    if (old === undefined) delete process.env[name];
    else process.env[name] = old;
  }
}

test("logger: lines below the level are dropped; text lines are 'name: message'", () => {
  withEnv("VERBUS_LOG_LEVEL", undefined, () => {
    const { log, lines } = capture({ name: "x" });
    assertEquals(log.level, "warn");
    log.debug("d");
    log.info("i");
    log.warn("w");
    log.error("e");
    assertEquals(lines, ["x: w", "x: e"]);
    const info = capture({ name: "y", level: "info" });
    info.log.debug("d");
    info.log.info("i");
    assertEquals(info.lines, ["y: i"]);
    const silent = capture({ level: "silent" });
    silent.log.error("e");
    assertEquals(silent.lines, []);
  });
});

test("logger: json lines carry level, name, msg and time", () => {
  withEnv("VERBUS_LOG_LEVEL", undefined, () => {
    const { log, lines } = capture({ name: "verbus serve", level: "info", json: true });
    log.info('a "quoted"\nline');
    const o = JSON.parse(lines[0]!);
    assertEquals([o.level, o.name, o.msg], ["info", "verbus serve", 'a "quoted"\nline']);
    assert(!Number.isNaN(Date.parse(o.time)), o.time);
  });
});

test("logger: VERBUS_LOG_LEVEL decides over the default; a bad value is ignored", () => {
  assertEquals(withEnv("VERBUS_LOG_LEVEL", "debug", () => effectiveLevel("warn")), "debug");
  assertEquals(withEnv("VERBUS_LOG_LEVEL", " ERROR ", () => effectiveLevel("info")), "error");
  assertEquals(withEnv("VERBUS_LOG_LEVEL", "loud", () => effectiveLevel("info")), "info");
  const { log, lines } = withEnv("VERBUS_LOG_LEVEL", "silent", () => capture({ level: "info" }));
  log.warn("w");
  assertEquals(lines, []);
  assertEquals(withEnv("VERBUS_LOG_LEVEL", undefined, () => libraryLogger().level), "warn");
  assertEquals(
    withEnv("VERBUS_LOG_LEVEL", undefined, () => cliLogger("verbus x", true).level),
    "info",
  );
});

/** A program serving with a fabric this host cannot offer (urma without liburma), no logger. */
const LIBRARY_SERVER = `
import { serve } from ${JSON.stringify(join(REPO_ROOT, "mod.ts"))};
const s = await serve({ port: 0, services: {}, fabric: { fabrics: ["shm", "urma"] } });
console.log("listening on " + s.port);
await s.close();
`;

function runLibraryServer(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), "verbus-log-test-"));
  try {
    const file = join(dir, "server.ts");
    writeFileSync(file, LIBRARY_SERVER);
    const argv = RUNTIME === "deno"
      ? ["run", "-A", "--config", join(REPO_ROOT, "deno.json"), file]
      : [file];
    const r = spawnSync(runtimeBinary(RUNTIME as "deno" | "bun"), argv, {
      cwd: REPO_ROOT,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, VERBUS_LIBURMA: "/nonexistent/liburma.so.0", ...env },
    });
    return { code: r.status, out: r.stdout ?? "", err: r.stderr ?? "" };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test(
  "the library says nothing below warn by default; VERBUS_LOG_LEVEL=info shows the fabric line",
  () => {
    const quiet = runLibraryServer({ VERBUS_LOG_LEVEL: "" });
    assertEquals(quiet.code, 0, quiet.err);
    assert(quiet.out.includes("listening on"), quiet.out);
    assert(!quiet.err.includes("unavailable"), `said below warn by default:\n${quiet.err}`);
    const told = runLibraryServer({ VERBUS_LOG_LEVEL: "info" });
    assert(/^verbus: fabric urma unavailable on this server/m.test(told.err), told.err);
  },
  { timeoutMs: 90_000 },
);

/** Both lines seen, in either order (stdout and stderr are two pipes); the port is not needed. */
const BOTH_JSON =
  /unavailable[^\n]*\n[\s\S]*"port":\d+[^\n]*\n|"port":\d+[^\n]*\n[\s\S]*unavailable[^\n]*\n/;
const BOTH_TEXT =
  /unavailable[^\n]*\n[\s\S]*listening on[^\n]*\n|listening on[^\n]*\n[\s\S]*unavailable[^\n]*\n/;

test(
  "verbus serve --json: every stderr line is JSON; the fabric a host lacks is info",
  async () => {
    const env = { VERBUS_LIBURMA: "/nonexistent/liburma.so.0", VERBUS_LOG_LEVEL: "" };
    const args = ["serve", "--port", "0", "--fabric", "shm,urma"];
    const json = await withChild(
      RUNTIME as "deno" | "bun",
      "cli/main.ts",
      { args: [...args, "--json"], env, ready: BOTH_JSON },
      (c) => Promise.resolve(c.output()),
    );
    const lines = json.trim().split("\n");
    for (const l of lines) assert(l.startsWith("{"), `not JSON under --json: ${l}`);
    const fabric = lines.map((l) => JSON.parse(l)).find((o) =>
      String(o.msg).includes("unavailable")
    );
    assertEquals([fabric?.level, fabric?.name], ["info", "verbus serve"], json);
    const text = await withChild(
      RUNTIME as "deno" | "bun",
      "cli/main.ts",
      {
        args,
        env,
        ready: BOTH_TEXT,
      },
      (c) => Promise.resolve(c.output()),
    );
    assert(/^verbus serve: fabric urma unavailable on this server/m.test(text), text);
  },
  { timeoutMs: 90_000 },
);
