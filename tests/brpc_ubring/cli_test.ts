/**
 * `verbus serve --brpc-ubring` and `verbus call --brpc-ubring`, as a user runs them: a serve of
 * the other runtime, a call of this one over the rings (brpc's test.PerfTestService/Test with an
 * echoed attachment: the op line says `brpc-ubring`); what does not go with --brpc-ubring is a
 * usage error (exit 2).
 */
import { RUNTIME } from "../../ffi/runtime.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { type Child, otherRuntime, withChild } from "../util/proc.ts";
import { verbus } from "../util/verbus_cli.ts";
import { assertPerfTestAnswered, perfTestCall } from "./util.ts";

test(
  `verbus call --brpc-ubring (${RUNTIME}) to verbus serve --brpc-ubring (${otherRuntime()})`,
  async () => {
    const serve = { args: ["serve", "--port", "0", "--brpc-ubring", "--fabric", "none"] };
    await withChild(otherRuntime(), "cli/main.ts", serve, async (c: Child) => {
      assert(/brpc-ubring/.test(c.output()), c.output());
      const r = perfTestCall(c.port);
      assertPerfTestAnswered(r);
    });
  },
  { timeoutMs: 60_000 },
);

test("verbus call --brpc-ubring: other ops and --brpc-rdma with it are usage errors", () => {
  const a = verbus(["call", "--brpc-ubring", "--port", "1", "--ping"]);
  assertEquals(a.code, 2, a.err);
  assert(/--brpc-ubring runs only --method and --brpc-echo, not --ping/.test(a.err), a.err);
  const b = verbus(["call", "--brpc-ubring", "--brpc-rdma", "--port", "1", "--brpc-echo", "x"]);
  assertEquals(b.code, 2, b.err);
  assert(/--brpc-rdma or --brpc-ubring: one of them/.test(b.err), b.err);
});
