/**
 * Headers and the same-host agent: the agent's ring records have no room for request headers
 * (user_fields, request_id), so a call that carries them is never sent through the agent with
 * them dropped — it goes over the client's own connection when the agent client has a fallback,
 * and is refused naming why otherwise. Calls without headers still go through the agent.
 */
import { VerbusError } from "../../errors.ts";
import { connectAgent } from "../../rpc/agent/agent_client.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { withAgent } from "./util.ts";

const enc = new TextEncoder();

test(
  "a call with headers is not sent through the agent's ring: fallback, or refused naming why",
  async () => {
    await withAgent("headers", async (s, name, _agent, c) => {
      const userFields = new Map([["traceparent", "00-ab-cd-01"]]);
      const e = await assertRejects(
        () => c.call("verbus.Demo", "Echo", enc.encode("hi"), { userFields }),
        VerbusError,
      );
      assertEquals(e.code, "INVALID_ARGUMENT");
      assert(e.message.includes(`agent "${name}"`) && e.message.includes("fallback"), e.message);
      assertEquals((await c.call("verbus.Demo", "Echo", enc.encode("hi"))).via, "agent");
      const f = await connectAgent(name, { fallback: `127.0.0.1:${s.server.port}` });
      try {
        const r = await f.call("verbus.Demo", "Echo", enc.encode("hi"), { requestId: "r-1" });
        assertEquals([r.via, new TextDecoder().decode(r.response)], ["direct", "hi"]);
        assertEquals((await f.call("verbus.Demo", "Echo", enc.encode("hi"))).via, "agent");
      } finally {
        await f.close();
      }
    });
  },
  { timeoutMs: 120_000 },
);
