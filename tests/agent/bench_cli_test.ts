/**
 * `verbus call --agent NAME --async-bench N`: the agent measured with the bench a direct client
 * runs — the same report (calls/s, mean, p50, p99, p99.9, quantiles, paths), `--json` or a line
 * a person reads, for every `--bench-op` the agent forwards (ping, echo, put, get), every call
 * through the agent's ring (`via: "agent"`, the agent's connection the server's only one).
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { verbusAsync, withAgent } from "./util.ts";

const N = 300;
const WARMUP = 20;

test(
  "verbus call --agent NAME --async-bench N --bench-op ping|echo|put|get: the direct client's report, every call through the agent",
  () =>
    withAgent("bench", async (s, name) => {
      const ops = ["ping", "echo", "put", "get"];
      for (const op of ops) {
        const r = await verbusAsync([
          "call",
          "--agent",
          name,
          "--async-bench",
          String(N),
          "--bench-op",
          op,
          "--async-warmup",
          String(WARMUP),
          "--async-window",
          "8",
          "--json",
        ]);
        assertEquals(r.code, 0, r.output);
        const line = JSON.parse(r.output.trim().split("\n").at(-1)!);
        assertEquals([line.ok, line.op, line.path], [true, `bench:${op}`, "EAGER"], r.output);
        const res = line.result;
        assertEquals([res.count, res.failed, res.window, res.via], [N, 0, 8, "agent"], r.output);
        for (const k of ["qps", "mean_us", "p50_us", "p99_us", "p999_us"]) {
          assert(typeof res[k] === "number" && res[k] > 0, `${op}: ${k} in ${r.output}`);
        }
        assert(res.p50_us <= res.p99_us && res.p99_us <= res.p999_us, r.output);
        // this process's CPU over the measured calls (µs, user and kernel)
        assert(res.cpu_us.user + res.cpu_us.system > 0, `${op}: cpu_us in ${r.output}`);
        assertEquals(res.quantiles.length > 50, true, "the latency quantiles");
        assertEquals(res.paths, { EAGER: N }, r.output);
      }
      // every put went through the agent, once: the warm-up and the measured calls
      assertEquals(s.kv.puts.get("bench"), N + WARMUP);
      assertEquals(s.server.stats().connectionsTotal, 1, "no direct connection: the agent's only");
      const human = await verbusAsync(["call", "--agent", name, "--async-bench", "50"]);
      assertEquals(human.code, 0, human.output);
      assert(/^ok +bench:echo +path=EAGER .*"p999_us"/m.test(human.output), human.output);
    }),
  { timeoutMs: 180_000 },
);
