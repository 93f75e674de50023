/**
 * The `verbus` command line, as a user runs it: `verbus serve` on the other runtime, `verbus call`
 * on this one (`--json`: one object per op with ok, op, path, fabric, latency_us, result), every
 * demo op, the fault flags, the lifecycle demos and bad options named in the error. (The
 * single-file binary is tested in binary_test.ts.)
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { otherRuntime, REPO_ROOT, withChild } from "../util/proc.ts";
import { jsonLines as lines, verbus } from "../util/verbus_cli.ts";

// Long enough that a reclaim in flight never races the sweep; short enough for --lifecycle-timeout.
const SERVE = ["--object-ttl-ms", "1500"];

test(`verbus call (${RUNTIME}) → verbus serve (${otherRuntime()}): every op, --json`, async () => {
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0", ...SERVE] },
    async (srv) => {
      const file = join(REPO_ROOT, "build", `cli-test-${RUNTIME}.bin`);
      writeFileSync(file, new Uint8Array(60_000).map((_, i) => i * 7));
      const r = verbus([
        "call",
        "--port",
        String(srv.port),
        "--json",
        "--ping",
        "--echo",
        "hi",
        "--put",
        "k",
        "v",
        "--get",
        "k",
        "--mget",
        "k,nope",
        "--profile",
        "7",
        "--large-get",
        "big:64k",
        "--bigput",
        "bk",
        "20000",
        "--image-put",
        "cli.png",
        file,
        "--brpc-echo",
        "hello",
      ]);
      assertEquals(r.code, 0, r.err);
      const got = lines(r.out);
      assertEquals(got.map((l) => l.op), [
        "ping",
        "echo",
        "put",
        "get",
        "mget",
        "profile",
        "large-get",
        "bigput",
        "image-put",
        "brpc-echo",
      ]);
      for (const l of got) {
        assert(
          l.ok === true && typeof l.latency_us === "number" && l.fabric === "shm",
          JSON.stringify(l),
        );
      }
      const by = Object.fromEntries(got.map((l) => [l.op, l]));
      assertEquals([by.echo.result, by.get.result, by.mget.result, by["brpc-echo"].result], [
        "hi",
        "v",
        ["v", null],
        "hello",
      ]);
      assertEquals([by["large-get"].path, (by["large-get"].result as { bytes: number }).bytes], [
        "LAZY",
        65536,
      ]);
      assertEquals(by.bigput.path, "BULK");
      assertEquals((by["image-put"].result as { bytes: number; chunks: number }).chunks, 3);
    },
  );
}, { timeoutMs: 120_000 });

test("fault flags and forced paths from the command line", async () => {
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0", ...SERVE] },
    async (srv) => {
      const p = String(srv.port);
      const path = (extra: string[]) =>
        lines(verbus(["call", "--port", p, "--json", "--echo", "x", ...extra]).out)[0]?.path;
      assertEquals(path([]), "EAGER");
      assertEquals(path(["--force-path", "tcp"]), "TCP_FALLBACK");
      assertEquals(path(["--force-path", "bulk"]), "BULK");
      assertEquals(path(["--simulate-fabric-down"]), "TCP_FALLBACK");
      assertEquals(path(["--simulate-op-fail", "1"]), "TCP_FALLBACK");
      assertEquals(path(["--simulate-errors", "9"]), "TCP_FALLBACK");
      assertEquals(path(["--simulate-server-pressure", "ring"]), "TCP_FALLBACK");
      assertEquals(path(["--simulate-server-pressure", "objpool"]), "TCP_FALLBACK");
      assertEquals(path(["--fabric", "tcp"]), "TCP_FALLBACK");
      // What is reported comes from what happened: the session really is down.
      const run = (extra: string[]) =>
        lines(verbus(["call", "--port", p, "--json", ...extra]).out)[0];
      const lc = run(["--lifecycle", "3", "--simulate-fabric-down"]);
      assertEquals([lc.ok, lc.fabric, lc.path], [false, "tcp", "-"], JSON.stringify(lc));
      const bench = run(["--async-bench", "20", "--simulate-fabric-down"]);
      assertEquals([bench.path, bench.fabric], ["TCP_FALLBACK", "tcp"], JSON.stringify(bench));
      const healthy = run(["--lifecycle", "2", "--port=" + p]);
      assertEquals([healthy.ok, healthy.fabric, healthy.path], [true, "shm", "LAZY"]);
    },
  );
}, { timeoutMs: 180_000 });

test("lifecycle demos and --stats from the command line", async () => {
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0", ...SERVE] },
    async (srv) => {
      const r = verbus([
        "call",
        "--port",
        String(srv.port),
        "--json",
        "--lifecycle",
        "5",
        "--lifecycle-stale",
        "--lifecycle-repeat-reclaim",
        "--lifecycle-timeout",
        "--stats",
      ]);
      assertEquals(r.code, 0, r.err);
      const by = Object.fromEntries(
        lines(r.out).map((l) => [l.op, l.result as Record<string, number>]),
      );
      assertEquals(
        [by.lifecycle.allocated, by.lifecycle.reclaimed],
        [5, 5],
        JSON.stringify(by.lifecycle),
      );
      assertEquals(by["lifecycle-stale"].stale_refs, 1);
      assertEquals(by["lifecycle-repeat-reclaim"].stale_refs, 1);
      assertEquals(by["lifecycle-timeout"].ttl_reclaimed, 1);
      const stats = by.stats as unknown as { fabric: string; server: { completed: number } };
      assertEquals(stats.fabric, "shm");
      assert(stats.server.completed > 0, "server snapshot in --stats");
    },
  );
}, { timeoutMs: 120_000 });

test("--async-bench --async-warmup: the warm-up calls are made but not measured", async () => {
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0", ...SERVE] },
    async (srv) => {
      const r = verbus([
        "call",
        "--port",
        String(srv.port),
        "--json",
        "--async-bench",
        "20",
        "--async-warmup",
        "30",
        "--async-window",
        "4",
        "--stats",
      ]);
      assertEquals(r.code, 0, r.err);
      const by = Object.fromEntries(lines(r.out).map((l) => [l.op, l.result]));
      const bench = by["bench:echo"] as { count: number; paths: Record<string, number> };
      assertEquals(bench.count, 20, JSON.stringify(bench));
      assertEquals(Object.values(bench.paths).reduce((a, b) => a + b, 0), 20);
      // …while the client really made all 50 calls
      const calls = (by.stats as { calls: Record<string, number> }).calls;
      assertEquals(Object.values(calls).reduce((a, b) => a + b, 0), 50, JSON.stringify(calls));
    },
  );
}, { timeoutMs: 120_000 });

test(
  "ops run in the order given, repeats each time; --large-get takes big:SIZE or a KV key",
  async () => {
    await withChild(
      otherRuntime(),
      "cli/main.ts",
      { args: ["serve", "--port", "0", ...SERVE] },
      async (srv) => {
        const p = String(srv.port);
        const k = `order-${RUNTIME}-${Date.now() % 100000}`;
        const a = verbus([
          "call",
          "--port",
          p,
          "--json",
          "--get",
          k,
          "--put",
          k,
          "v1",
          "--get",
          k,
          "--echo",
          "a",
          "--echo",
          "b",
          "--large-get",
          k,
          "--large-get",
          "big:4k",
        ]);
        assertEquals(a.code, 0, a.err);
        const got = lines(a.out);
        assertEquals(got.map((l) => [l.op, l.result]), [
          ["get", null],
          ["put", { replaced: false, length: 2 }],
          ["get", "v1"],
          ["echo", "a"],
          ["echo", "b"],
          ["large-get", { bytes: 2 }],
          ["large-get", { bytes: 4096 }],
        ]);
        // a KV key with no value: the error says how a generated object is named
        const miss = verbus(["call", "--port", p, "--json", "--large-get", `${k}:64k`]);
        assertEquals(miss.code, 1, miss.err);
        const why = String(lines(miss.out)[0]?.error);
        assert(why.includes("no large object") && why.includes("big:SIZE, e.g. big:64k"), why);
        // three pings, then the stats: three calls counted
        const b = verbus(["call", "--port", p, "--json", "--ping", "--ping", "--ping", "--stats"]);
        assertEquals(b.code, 0, b.err);
        const out = lines(b.out);
        assertEquals(out.map((l) => l.op), ["ping", "ping", "ping", "stats"]);
        const calls = (out[3].result as { calls: Record<string, number> }).calls;
        assertEquals(Object.values(calls).reduce((x, y) => x + y, 0), 3, JSON.stringify(calls));
        // no op: a usage error, not a silent exit 0
        const c = verbus(["call", "--port", p]);
        assertEquals([c.code, c.out], [2, ""], c.err);
        assert(c.err.startsWith("verbus call: no op given"), c.err);
      },
    );
  },
  { timeoutMs: 120_000 },
);

test("a bad option is refused naming it (exit 2), a bad value too", () => {
  const a = verbus(["call", "--port", "1", "--frobnicate", "3"]);
  assertEquals(a.code, 2);
  assert(a.err.includes("--frobnicate"), a.err);
  const b = verbus(["call", "--port", "1", "--force-path", "sideways"]);
  assertEquals(b.code, 2);
  assert(b.err.includes("--force-path"), b.err);
  const c = verbus(["serve", "--port", "99999"]);
  assertEquals(c.code, 2);
  assert(c.err.includes("--port"), c.err);
  // the first line (before the usage) names the option and what is wrong with it
  const first = (r: { err: string }) => r.err.split("\n")[0];
  assert(first(a).includes("unknown option --frobnicate"), a.err);
  assert(/force-path.*expected one of/.test(first(b)), b.err);
  assert(/port.*65535/.test(first(c)), c.err);
});
