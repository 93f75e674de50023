/**
 * `verbus call --simulate-op-fail N` through the command line, several ops in one run: the Nth
 * fabric operation fails as a fabric error does — the calls before it went over the fabric, the
 * call that met it is retried over TCP (answered, once), and the session has ended, so every
 * later call of the run goes over TCP; what the help says, line for line.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { verbus } from "../util/verbus_cli.ts";

const OPS = [
  "--ping",
  "--echo",
  "x",
  "--put",
  "k",
  "v",
  "--get",
  "k",
  "--mget",
  "k,k",
  "--profile",
  "1",
];

test(`verbus call --simulate-op-fail (${RUNTIME} → ${otherRuntime()}): paths per op`, async () => {
  const help = verbus(["call", "--help"]).out;
  assert(/--simulate-op-fail N[\s\S]*every later call goes TCP/.test(help), help);
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0"] },
    async (srv) => {
      const run = (n: number) => {
        const r = verbus([
          "call",
          "--port",
          String(srv.port),
          "--json",
          ...OPS,
          ...(n ? ["--simulate-op-fail", String(n)] : []),
        ]);
        const got = r.out.trim().split("\n").filter((l) => l.startsWith("{")).map((l) =>
          JSON.parse(l)
        );
        assertEquals(got.length, 6, r.out + r.err);
        assert(got.every((g) => g.ok), r.out);
        assertEquals(got.map((g) => g.op), ["ping", "echo", "put", "get", "mget", "profile"]);
        return { paths: got.map((g) => g.path as string), err: r.err };
      };
      assertEquals(run(0).paths, Array(6).fill("EAGER"), "without the flag: all on the fabric");
      const seen = new Set<string>();
      for (const n of [1, 6, 12, 16]) {
        const { paths, err } = run(n);
        const first = paths.indexOf("TCP_FALLBACK");
        assert(first >= 0, `op ${n}: one call met the failure: ${paths}`);
        assert(paths.slice(0, first).every((p) => p === "EAGER"), `${n}: ${paths}`);
        assert(paths.slice(first).every((p) => p === "TCP_FALLBACK"), `${n}: ${paths}`);
        assert(err.includes(`simulated failure of fabric operation ${n}`), err);
        seen.add(String(first));
      }
      assert(seen.size >= 2, `a later N fails a later call: ${[...seen]}`);
    },
  );
}, { timeoutMs: 120_000 });
