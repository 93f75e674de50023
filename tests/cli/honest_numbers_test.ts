/**
 * The numbers `verbus call` shows say what they are: `--stats` after one call has that call's
 * latency (the first call is always measured) and says which calls its EWMA measures; the
 * server's control page times calls with the real clock (a synchronous handler no longer reads
 * 0.0 µs over thousands of calls); a forced path is named as forced beside the path that ran;
 * bench rows give the mean and p99.9 beside p50 and p99.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RUNTIME } from "../../ffi/runtime.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { jsonLines, verbus } from "../util/verbus_cli.ts";

test(
  `call --stats (${RUNTIME} → ${otherRuntime()} serve): measured calls counted, none shown as 0`,
  async () => {
    await withChild(
      otherRuntime(),
      "cli/main.ts",
      { args: ["serve", "--port", "0"] },
      async (srv) => {
        const port = String(srv.port);
        // one ping: before, the client measured 1 call in 16 from the 16th on and showed EAGER 0
        const one = verbus(["call", "--port", port, "--json", "--ping", "--stats"]);
        assertEquals(one.code, 0, one.err);
        const stats = jsonLines(one.out).find((l) => l.op === "stats")!.result as {
          latencyUs: Record<string, number>;
          latencySamples: Record<string, number>;
          server: { latencyUs: Record<string, number>; latencySamples: Record<string, number> };
        };
        assertEquals(stats.latencySamples.EAGER, 1, one.out);
        assert(stats.latencyUs.EAGER > 0, one.out);
        assertEquals(stats.latencySamples.LAZY, 0);
        // the server's EWMA: real-clock samples, not the turn clock's 0 for a synchronous handler
        assert(stats.server.latencySamples.EAGER >= 1, one.out);
        assert(stats.server.latencyUs.EAGER > 0, `server time 0 µs: ${one.out}`);

        // many calls: n is the number of calls measured (1 in 16, the first included), not all
        const many = verbus([
          "call",
          "--port",
          port,
          "--json",
          "--async-bench",
          "320",
          "--bench-op",
          "ping",
          "--async-window",
          "4",
          "--stats",
        ]);
        assertEquals(many.code, 0, many.err);
        const s2 = jsonLines(many.out).find((l) => l.op === "stats")!.result as typeof stats;
        const calls = (jsonLines(many.out).find((l) => l.op === "stats")!.result as {
          calls: Record<string, number>;
        }).calls;
        assertEquals(s2.latencySamples.EAGER, Math.ceil(calls.EAGER / 16), many.out);
        assert(s2.server.latencyUs.EAGER > 0, many.out);

        const text = verbus(["call", "--port", port, "--ping", "--stats"]);
        assertEquals(text.code, 0, text.err);
        assert(
          /EWMA, submit→result, of 1 fabric call in 16 and every TCP call: EAGER [\d.]+ µs \(n=1\)/
            .test(text.out),
          text.out,
        );
        assert(
          /server time +receive→answer, EWMA of 1 call in 16: EAGER [\d.]+ µs \(n=\d+\)/.test(
            text.out,
          ),
          text.out,
        );
        assert(!/EAGER 0(\.0)? µs/.test(text.out), text.out);
      },
    );
  },
  { timeoutMs: 120_000 },
);

test(
  `call --force-path (${RUNTIME}): the forced path is named beside the path that ran`,
  async () => {
    await withChild(
      otherRuntime(),
      "cli/main.ts",
      { args: ["serve", "--port", "0"] },
      async (srv) => {
        const port = String(srv.port);
        const j = verbus([
          "call",
          "--port",
          port,
          "--json",
          "--force-path",
          "lazy",
          "--echo",
          "small",
          "--large-get",
          "big:64k",
        ]);
        assertEquals(j.code, 0, j.err);
        assertEquals(
          jsonLines(j.out).map((l) => [l.op, l.forced, l.path]),
          [["echo", "LAZY", "EAGER"], ["large-get", "LAZY", "LAZY"]],
          j.out,
        );
        const t = verbus(["call", "--port", port, "--force-path", "lazy", "--echo", "small"]);
        assertEquals(t.code, 0, t.err);
        assert(t.out.includes("path=EAGER        (forced LAZY, ran EAGER)"), t.out);
        const plain = verbus(["call", "--port", port, "--echo", "small"]);
        assert(!plain.out.includes("forced"), plain.out);
      },
    );
  },
  { timeoutMs: 120_000 },
);

test(
  `call --async-bench (${RUNTIME}): a bench whose calls fail says how many and the first error`,
  async () => {
    await withChild(
      otherRuntime(),
      "cli/main.ts",
      // a 64 MiB answer is past the server's own max_body_size (64 MiB less room for the meta):
      // each such call fails at the server (ERESPONSE, the sizes named)
      { args: ["serve", "--port", "0", "--fabric", "none"] },
      async (srv) => {
        const args = [
          "call",
          "--port",
          String(srv.port),
          "--async-bench",
          "6",
          "--async-window",
          "2",
        ];
        const bad = [...args, "--bench-op", "large-get", "--bench-bytes", String(64 << 20)];
        const t = verbus(bad);
        assertEquals(t.code, 1, t.out + t.err);
        assert(
          /FAIL bench:large-get .*6 of 6 calls failed; first: .*67108864 bytes/.test(t.out),
          t.out,
        );
        const j = jsonLines(verbus([...bad, "--json"]).out)[0];
        const r = j.result as { failed: number; count: number };
        assertEquals([j.ok, r.failed, r.count], [false, 6, 6], JSON.stringify(j));
        assert(String(j.error).startsWith("6 of 6 calls failed; first: "), String(j.error));
        const good = jsonLines(verbus([...args, "--bench-op", "echo", "--json"]).out)[0];
        assertEquals([good.ok, good.error], [true, undefined], JSON.stringify(good));
      },
    );
  },
  { timeoutMs: 120_000 },
);

test(
  `bench rows (${RUNTIME}): mean and p99.9 beside p50 and p99, in --json, the table and --markdown`,
  async () => {
    await withChild(
      otherRuntime(),
      "cli/main.ts",
      { args: ["serve", "--port", "0"] },
      async (srv) => {
        const a = verbus([
          "call",
          "--port",
          String(srv.port),
          "--json",
          "--async-bench",
          "400",
          "--bench-op",
          "echo",
          "--async-window",
          "2",
        ]);
        assertEquals(a.code, 0, a.err);
        const r = jsonLines(a.out)[0].result as Record<string, number>;
        assert(r.mean_us > 0 && r.p50_us <= r.p99_us && r.p99_us <= r.p999_us, JSON.stringify(r));
        const dir = mkdtempSync(join(tmpdir(), "verbus-numbers-test-"));
        try {
          const md = join(dir, "bench.md");
          const small = [
            "--paths",
            "eager",
            "--inflight",
            "1",
            "--clients",
            "1",
            "--duration",
            "0.3",
          ];
          const b = verbus([
            "bench",
            "--connect",
            `127.0.0.1:${srv.port}`,
            "--markdown",
            md,
            ...small,
          ]);
          assertEquals(b.code, 0, b.err);
          assert(/mean µs +p50 µs +p99 µs +p99\.9 µs/.test(b.out), b.out);
          assert(
            /calls\/s, mean [\d.]+ µs, p50 [\d.]+ µs, p99 [\d.]+ µs, p99\.9 [\d.]+ µs/.test(b.err),
            b.err,
          );
          const table = readFileSync(md, "utf8");
          assert(table.includes("| calls/s | mean µs | p50 µs | p99 µs | p99.9 µs |"), table);
          const j = verbus(["bench", "--connect", `127.0.0.1:${srv.port}`, "--json", ...small]);
          const cell = JSON.parse(j.out).cells[0];
          assert(cell.mean_us > 0 && cell.p99_us <= cell.p999_us, JSON.stringify(cell));
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );
  },
  { timeoutMs: 120_000 },
);
