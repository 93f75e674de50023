/**
 * `verbus.Demo/Count` (the demo's server-streaming method) and `verbus call --stream-count N`:
 * in process (indexes in order, message sizes, bad requests EREQUEST, no stream EREQUEST), and
 * the command against a `verbus serve` of the other runtime (human and --json lines, the
 * stream's fabric: shm with the client's shm session, tcp with `--fabric tcp`; usage errors for a
 * bad count and for targets without streams).
 */
import { countIndexOf, demoService, encodeCountRequest } from "../../examples/demo/mod.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { RpcError } from "../../rpc/errors.ts";
import { serve } from "../../rpc/server/server.ts";
import { openStream } from "../../rpc/stream/open.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { verbus } from "../util/verbus_cli.ts";

test("verbus.Demo/Count streams count messages of the size asked, in order", async () => {
  const server = await serve({ port: 0, fabric: false, services: demoService() });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const { stream } = await openStream(ch, "verbus.Demo", "Count", encodeCountRequest(300, 100));
    let i = 0;
    for await (const m of stream) {
      assertEquals(m.length, 100);
      assertEquals(countIndexOf(m), i++);
    }
    assertEquals(i, 300);
    const bad = await assertRejects(
      () => openStream(ch, "verbus.Demo", "Count", encodeCountRequest(3, 4)),
      RpcError,
    );
    assert(/message size 4 is not in 8\.\./.test(bad.message), bad.message);
    const plain = await assertRejects(
      () => ch.call("verbus.Demo", "Count", encodeCountRequest(3)),
      RpcError,
    );
    assert(/call it with a stream/.test(plain.message), plain.message);
  } finally {
    await ch.close();
    await server.close();
  }
});

test("verbus call --stream-count N: messages, path STREAM, fabric, messages/s; usage errors", async () => {
  await withChild(
    otherRuntime(),
    "cli/main.ts",
    { args: ["serve", "--port", "0"] },
    async (srv) => {
      const p = String(srv.port);
      const j = verbus(["call", "--port", p, "--json", "--stream-count", "2000"]);
      assertEquals(j.code, 0, j.out + j.err);
      const line = JSON.parse(j.out.trim().split("\n").at(-1)!);
      // The client's shm session carries the stream: the report names the stream's fabric.
      assertEquals([line.ok, line.op, line.path, line.fabric, line.result.session_fabric], [
        true,
        "stream-count",
        "STREAM",
        "shm",
        "shm",
      ]);
      assertEquals(line.result.messages, 2000);
      assert(line.result.messages_per_s > 0, j.out);
      const h = verbus(["call", "--port", p, "--fabric", "tcp", "--stream-count", "10"]);
      assertEquals(h.code, 0, h.out + h.err);
      assert(
        /stream-count path=STREAM\s+fabric=tcp/.test(h.out) && /"messages":10/.test(h.out),
        h.out,
      );
    },
  );
  const bad = verbus(["call", "--port", "1", "--stream-count", "-1"]);
  assertEquals(bad.code, 2, bad.out + bad.err);
  assert(/stream-count/.test(bad.err + bad.out), bad.err);
  const agent = verbus(["call", "--agent", "a", "--stream-count", "3"]);
  assertEquals(agent.code, 2, agent.out + agent.err);
  assert(/a stream needs a direct connection/.test(agent.err + agent.out), agent.err);
});
