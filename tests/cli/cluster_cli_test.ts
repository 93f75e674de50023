/**
 * `verbus call --ns URL --lb NAME` and `verbus bench --ns URL`, as a user runs them: two
 * `verbus serve` of the other runtime named by `list://`; each op goes to the server the
 * balancer picks and its `--json` line names it (`server`, `attempts`; `--request-code` keeps a
 * consistent-hashing balancer on one server); `--async-bench` counts
 * the calls each server answered (`servers`, summing to the calls made), and so does every
 * cell of `verbus bench --ns`; `--max-retry` reaches the cluster (0: a dead server's turn
 * fails, default: retried elsewhere); what does not go with `--ns` is a usage error.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { type Child, otherRuntime, withChild } from "../util/proc.ts";
import { jsonLines as lines, verbus } from "../util/verbus_cli.ts";

/** Runs `fn` with two `verbus serve` of the other runtime and their `list://` URL. */
function withTwo(fn: (url: string, addrs: string[]) => Promise<void>): Promise<void> {
  const serve = { args: ["serve", "--port", "0"] };
  return withChild(
    otherRuntime(),
    "cli/main.ts",
    serve,
    (a: Child) =>
      withChild(otherRuntime(), "cli/main.ts", serve, (b: Child) => {
        const addrs = [`127.0.0.1:${a.port}`, `127.0.0.1:${b.port}`];
        return fn(`list://${addrs.join(",")}`, addrs);
      }),
  );
}

test(
  `verbus call --ns list://A,B --lb rr (${RUNTIME}): each op line names its server`,
  async () => {
    await withTwo(async (url, addrs) => {
      const r = verbus(["call", "--ns", url, "--lb", "rr", "--echo", "x", "--echo", "y", "--json"]);
      assertEquals(r.code, 0, r.err);
      const got = lines(r.out);
      assertEquals(got.map((l) => [l.op, l.ok, l.result, l.attempts, l.fabric]), [
        ["echo", true, "x", 1, "shm"],
        ["echo", true, "y", 1, "shm"],
      ]);
      assertEquals(got.map((l) => l.server).sort(), [...addrs].sort(), "rr: one op on each server");
      // For a person: the server on each line; --stats: the cluster's counters.
      const h = verbus(["call", "--ns", url, "--ping", "--get", "nope", "--stats"]);
      assertEquals(h.code, 0, h.err);
      const opLines = h.out.split("\n").filter((l) => l.startsWith("ok"));
      assertEquals(opLines.length, 2, h.out);
      for (const l of opLines) assert(addrs.some((a) => l.includes(`server=${a}`)), l);
      assert(h.out.includes(`cluster      ${url} (rr): 2 servers, 2 in rotation`), h.out);
      // Consistent hashing: one request code, one server, op after op.
      const ch = ["call", "--ns", url, "--lb", "c_murmurhash", "--request-code", "7", "--json"];
      const c = verbus([...ch, "--echo", "a", "--get", "k", "--echo", "b"]);
      assertEquals(c.code, 0, c.err);
      const routed = lines(c.out);
      assertEquals(routed.map((l) => l.ok), [true, true, true], c.out);
      assertEquals(new Set(routed.map((l) => l.server)).size, 1, c.out);
      assert(addrs.includes(String(routed[0].server)), c.out);
    });
  },
  { timeoutMs: 120_000 },
);

test(
  `verbus call --ns --async-bench (${RUNTIME}): a servers map that sums to the calls made`,
  async () => {
    await withTwo(async (url, addrs) => {
      const r = verbus([
        "call",
        "--ns",
        url,
        "--json",
        "--async-bench",
        "120",
        "--async-window",
        "8",
        "--bench-op",
        "get",
      ]);
      assertEquals(r.code, 0, r.err);
      const [bench] = lines(r.out);
      const res = bench.result as {
        count: number;
        failed: number;
        servers: Record<string, number>;
      };
      assertEquals([res.count, res.failed], [120, 0]);
      assertEquals(Object.keys(res.servers).sort(), [...addrs].sort());
      assertEquals(Object.values(res.servers), [60, 60], "rr: even");
    });
  },
  { timeoutMs: 120_000 },
);

test(
  `verbus bench --ns (${RUNTIME}): every cell counts the calls each server answered`,
  async () => {
    await withTwo(async (url, addrs) => {
      const r = verbus([
        "bench",
        "--ns",
        url,
        "--lb",
        "random",
        "--json",
        "--fabrics",
        "shm",
        "--paths",
        "eager,tcp",
        "--inflight",
        "4",
        "--clients",
        "2",
        "--duration",
        "0.3",
        "--warmup",
        "20",
      ]);
      assertEquals(r.code, 0, r.err);
      const report = JSON.parse(r.out);
      assertEquals([report.server.ns, report.server.lb, report.transports], [url, "random", [
        "shm",
        "tcp",
      ]]);
      assertEquals(report.cells.map((c: { path: string }) => c.path), ["EAGER", "TCP_FALLBACK"]);
      for (const c of report.cells) {
        assert(c.calls > 0 && c.failed === 0, JSON.stringify(c));
        assertEquals(Object.keys(c.servers).sort(), [...addrs].sort(), JSON.stringify(c.servers));
        const sum = Object.values(c.servers as Record<string, number>).reduce((a, b) => a + b, 0);
        assertEquals(sum, c.calls, "the servers' counts add up to the calls");
      }
    });
  },
  { timeoutMs: 120_000 },
);

test(
  `verbus call --ns --max-retry (${RUNTIME}): a dead server's turn is retried, or not with 0`,
  async () => {
    await withChild(
      otherRuntime(),
      "cli/main.ts",
      { args: ["serve", "--port", "0"] },
      async (a) => {
        // A port that was listening and is no more: nothing answers there.
        let dead = 0;
        await withChild(otherRuntime(), "cli/main.ts", { args: ["serve", "--port", "0"] }, (d) => {
          dead = d.port;
          return Promise.resolve();
        });
        const live = `127.0.0.1:${a.port}`;
        const url = `list://127.0.0.1:${dead},${live}`;
        const ops = ["--lb", "rr", "--echo", "p", "--echo", "q", "--json"];
        const retried = verbus(["call", "--ns", url, ...ops]);
        assertEquals(retried.code, 0, retried.err);
        const got = lines(retried.out);
        assertEquals(got.map((l) => [l.ok, l.server]), [[true, live], [true, live]]);
        assertEquals(got.map((l) => l.attempts).sort(), [1, 2], "one op met the dead server first");
        const none = verbus(["call", "--ns", url, "--max-retry", "0", ...ops]);
        assertEquals(none.code, 1, none.err);
        const outcomes = lines(none.out).map((l) => l.ok).sort();
        assertEquals(outcomes, [false, true], none.out);
      },
    );
  },
  { timeoutMs: 120_000 },
);

test("verbus call/bench: what does not go with --ns is a usage error (exit 2) saying why", () => {
  const cases: [string[], string][] = [
    [["call", "--ns", "list://127.0.0.1:1", "--port", "1", "--ping"], "not with --port"],
    [["call", "--ns", "list://127.0.0.1:1", "--lb", "fastest", "--ping"], 'balancer "fastest"'],
    [["call", "--port", "1", "--lb", "rr", "--ping"], "go with --ns"],
    [["call", "--ns", "list://127.0.0.1:1", "--lifecycle", "1"], "--lifecycle* need"],
    [["call", "--ns", "list://127.0.0.1:1", "--brpc-rdma", "--brpc-echo", "x"], "not --ns"],
    [["call", "--ns", "127.0.0.1:1", "--ping"], "naming-service URL"],
    [["bench", "--ns", "list://127.0.0.1:1", "--connect", "127.0.0.1:1"], "not with --connect"],
    [["bench", "--lb", "rr"], "go with --ns"],
    [["call", "--port", "1", "--request-code", "3", "--ping"], "go with --ns"],
  ];
  for (const [args, why] of cases) {
    const r = verbus([...args, "--json"]);
    assertEquals(r.code, 2, `${args.join(" ")}: ${r.err}`);
    const e = JSON.parse(r.err.trim().split("\n").pop()!);
    assert(String(e.error).includes(why), `${args.join(" ")}: ${e.error}`);
  }
}, { timeoutMs: 120_000 });
