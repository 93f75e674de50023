/**
 * The agent client's call path (`rpc/agent/agent_client.ts`): a call posted at once from its
 * slot still fails the way an async call does — a call whose fields cannot be encoded rejects
 * its promise (never throws at the caller) and gives its slot back, so every later call of the
 * client, more than its slots' worth, is answered.
 */
import { assert, assertEquals, test } from "../harness.ts";
import type { ClientCallOptions } from "../../rpc/client/client_options.ts";
import { withAgent } from "./util.ts";

test("agent client: an unencodable call rejects its promise and gives its slot back", async () => {
  await withAgent("callpath", async (_s, _name, _agent, c) => {
    const bad = { logId: "not a number" } as unknown as ClientCallOptions;
    let thrown: unknown = null, rejected: unknown = null;
    for (let i = 0; i < 40; i++) { // more than the ring's 32 slots per producer
      try {
        await c.call("verbus.Demo", "Echo", new Uint8Array(1), bad).catch((e) => (rejected = e));
      } catch (e) {
        thrown = e; // a synchronous throw would land here (the `.catch` never attached)
      }
    }
    assertEquals(thrown, null, "no synchronous throw");
    assert(rejected instanceof Error, `the promise was rejected: ${rejected}`);
    const answers = await Promise.all(
      Array.from(
        { length: 40 },
        (_, i) => c.call("verbus.Demo", "Echo", new Uint8Array([i])).then((r) => r.response[0]),
      ),
    );
    assertEquals(answers, Array.from({ length: 40 }, (_, i) => i));
  });
}, { timeoutMs: 60_000 });
