/**
 * The fabric session's `verbus.Fabric/Watch` and the connection's limits: the open Watch does not
 * count against `maxInflightPerConnection` (with a cap of 1 it used to refuse every TCP call of a
 * fabric client's connection with ELIMIT), and a session has one open Watch at most (a second
 * one is refused naming it — the exemption cannot be used to park unbounded calls). Both
 * runtimes, shm.
 * @module
 */
import { connect } from "../../rpc/client/client.ts";
import {
  byeSchema,
  decodeHello,
  encodeBye,
  FABRIC_SERVICE,
} from "../../rpc/session/handshake/hello.ts";
import { serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { until } from "./util.ts";

const enc = new TextEncoder(), dec = new TextDecoder();

test("with maxInflightPerConnection 1 a fabric client's TCP calls still run beside its open Watch; the cap still holds for calls", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    maxInflightPerConnection: 1,
    services: {
      "t.W": {
        Echo: (r: Uint8Array) => r.slice(),
        Hold: async (r: Uint8Array) => (await gate, r.slice()),
      },
    },
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    fabric: "shm",
    logger: { warn: () => {} },
  });
  try {
    assertEquals(c.fabric, "shm", JSON.stringify(c.handshake));
    const r = await c.call("t.W", "Echo", enc.encode("over tcp"), { forcePath: "TCP_FALLBACK" });
    assertEquals([r.path, dec.decode(r.response)], ["TCP_FALLBACK", "over tcp"]);
    // One call in flight over TCP fills the cap: a second one is refused at once.
    const held = c.call("t.W", "Hold", enc.encode("held"), { forcePath: "TCP_FALLBACK" });
    await new Promise((r) => setTimeout(r, 50));
    const refused = await c.call("t.W", "Echo", enc.encode("x"), { forcePath: "TCP_FALLBACK" })
      .then(() => "answered", (e: Error) => e.message);
    assert(/max_inflight_per_connection=1/.test(refused), refused);
    release();
    assertEquals(dec.decode((await held).response), "held");
    assertEquals((await c.call("t.W", "Echo", enc.encode("fabric"))).path, "EAGER");
  } finally {
    release();
    await c.close();
    await server.close();
  }
});

test("a second Watch for the same session is refused naming it; the first still brings the notice", async () => {
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.W": { Echo: (r: Uint8Array) => r.slice() } },
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    fabric: "shm",
    reestablishMs: 0,
    logger: { warn: () => {} },
  });
  try {
    assertEquals(c.fabric, "shm", JSON.stringify(c.handshake));
    assertEquals((await c.call("t.W", "Echo", enc.encode("a"))).path, "EAGER");
    const s = [...server.fabric!.sessions][0];
    const second = await c.channel.call(
      FABRIC_SERVICE,
      "Watch",
      encodeBye({ sessionId: s.id, reason: "watch" }),
    ).then((r) => decodeHello(byeSchema, r.response, "notice").reason, (e: Error) => e.message);
    assert(/a Watch is already open for fabric session/.test(second), second);
    assertEquals((await c.call("t.W", "Echo", enc.encode("b"))).path, "EAGER", "still served");
    s.endpoint.faults.inject("fail", "ended for the first watch");
    await until("the client learns through its Watch", () => c.fabric === "tcp", 10_000);
  } finally {
    await c.close();
    await server.close();
  }
});
