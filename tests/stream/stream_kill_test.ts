/**
 * A peer killed mid-stream (a process of the other runtime, SIGKILLed): the surviving side's
 * stream ends with kind "connection" naming the peer, reads and writes fail at once instead of
 * waiting, nothing stays registered, and the survivor goes on (a new stream on a new connection).
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { serve } from "../../rpc/server/server.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { otherRuntime, spawnScript } from "../util/proc.ts";

const SCRIPT = "tests/stream/stream_peer.ts";

test("the server process is killed mid-stream: the client's stream fails with kind connection", async () => {
  const child = await spawnScript(otherRuntime(), SCRIPT, { args: ["server"] });
  try {
    const ch = await connect({ host: "127.0.0.1", port: child.port });
    try {
      const { stream } = await openStream(ch, "S", "M", new Uint8Array(0));
      const table = await ch._streams();
      assertEquals(table.size, 1);
      for (let i = 0; i < 10; i++) {
        assertEquals(new TextDecoder().decode((await stream.read())!), `tick ${i}`);
      }
      await child.kill("SIGKILL");
      // drain what arrived before the kill; then the end
      const e = await assertRejects(async () => {
        for (;;) if ((await stream.read()) === undefined) return;
      }, StreamError);
      assertEquals(e.kind, "connection");
      assert(/connection ended/.test(e.message), e.message);
      await assertRejects(() => stream.write(new Uint8Array(1)), StreamError);
      assertEquals(table.size, 0);
      assertEquals(ch.pendingCalls, 0);
    } finally {
      await ch.close();
    }
  } finally {
    await child.kill("SIGKILL");
  }
});

test("the client process is killed mid-stream: the server's stream ends, the server serves on", async () => {
  const streams: Stream[] = [];
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    fabric: false,
    services: { S: { M: (_r, ctx) => (streams.push(acceptStream(ctx)), new Uint8Array(0)) } },
  });
  try {
    const child = await spawnScript(otherRuntime(), SCRIPT, {
      args: ["client", String(server.port)],
      ready: /streaming on/,
    });
    try {
      const first = await streams[0].read();
      assert(first !== undefined);
      await child.kill("SIGKILL");
      const end = await streams[0].ended;
      assertEquals(end?.kind, "connection");
      await assertRejects(() => streams[0].write(new Uint8Array(1)), StreamError);
    } finally {
      await child.kill("SIGKILL");
    }
    // a new client gets a new stream
    const ch = await connect({ host: "127.0.0.1", port: server.port });
    const { stream } = await openStream(ch, "S", "M", new Uint8Array(0));
    await streams[1].write(new TextEncoder().encode("again"));
    assertEquals(new TextDecoder().decode((await stream.read())!), "again");
    await ch.close();
  } finally {
    await server.close();
  }
});
