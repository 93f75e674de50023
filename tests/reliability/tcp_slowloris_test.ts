/**
 * Slowloris and idle peers (issue 12, fault 4): a frame begun must arrive whole within
 * `headerTimeoutMs`, however slowly its bytes trickle in, and a connection with nothing going on
 * is closed after `idleTimeoutMs`; each is told why (an ECLOSE answer to correlation_id 0). A
 * busy client is never taken for idle. On main a connection that sent half a header stayed open
 * indefinitely (there was no timer at all).
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { connect as connectClient } from "../../rpc/client/client.ts";
import { SHM_ONLY, SMALL_REGION } from "../fabric/util.ts";
import { ECLOSE } from "../../rpc/errors.ts";
import { encodeFrame } from "../../rpc/protocol/frame.ts";
import { serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { connectWatcher, lastWord, sleep } from "./tcp_peers.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const services = { "t.Rel": { Echo: (r: Uint8Array) => r } };

test("slowloris: a frame trickled byte by byte is closed after the header timeout", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    services,
    fabric: false,
    headerTimeoutMs: 400,
    idleTimeoutMs: 0,
    logger: { warn: (m) => void log.push(m) },
  });
  const good = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const frame = encodeFrame(
      { request: { serviceName: "t.Rel", methodName: "Echo" }, correlationId: 5 },
      new Uint8Array(200),
    );
    // Half a header, one byte every 50 ms; and a whole header with a body that never ends.
    const loris = await connectWatcher(server.port);
    const body = await connectWatcher(server.port);
    body.write(frame.subarray(0, 100));
    const t0 = performance.now();
    let i = 0;
    const drip = setInterval(() => loris.write(frame.subarray(i, ++i)), 50);
    try {
      // The good client keeps being answered meanwhile.
      for (let k = 0; k < 5; k++) {
        assertEquals(
          td.decode((await good.call("t.Rel", "Echo", te.encode(`k${k}`))).response),
          `k${k}`,
        );
        await sleep(20);
      }
      assert(await loris.closedWithin(10_000), "the trickling peer is closed");
      const took = performance.now() - t0;
      assert(took >= 350, `closed after ${took.toFixed(0)} ms: not before the header timeout`);
      assert(await body.closedWithin(10_000), "the peer with an unfinished body is closed");
    } finally {
      clearInterval(drip);
    }
    for (const w of [loris, body]) {
      const why = lastWord(w);
      assertEquals(why?.code, ECLOSE, "told why");
      assert(why!.text.startsWith("frame incomplete after 400 ms"), why!.text);
    }
    assert(lastWord(body)!.text.includes("(88 bytes of it buffered)"), lastWord(body)!.text);
    assertEquals(server.stats().headerTimeouts, 2);
    assertEquals(server.stats().idleTimeouts, 0);
    assertEquals(
      td.decode((await good.call("t.Rel", "Echo", te.encode("after"))).response),
      "after",
    );
    assertEquals(server.stats().connections, 1, "only the good connection is left");
    assertEquals(log, [], "a timeout is not a protocol error");
  } finally {
    await good.close();
    await server.close();
  }
});

test("idle: a silent connection is closed after the idle timeout, a busy one is kept", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = await serve({
    port: 0,
    fabric: false,
    idleTimeoutMs: 300,
    services: { "t.Rel": { ...services["t.Rel"], Hold: async (r: Uint8Array) => (await gate, r) } },
  });
  const busy = await connect({ host: "127.0.0.1", port: server.port });
  // The busy client has a call running all along (silent on the wire, but not idle) — from right
  // after it connected: on a loaded machine the watchers' set-up below can outlast the timeout.
  const held = busy.call("t.Rel", "Hold", te.encode("held"));
  try {
    const t0 = performance.now(); // before either connection exists: both close >= 300 ms later
    const silent = await connectWatcher(server.port);
    // One call, then silence: idle counts from the last byte received.
    const quiet = await connectWatcher(server.port);
    quiet.write(
      encodeFrame(
        { request: { serviceName: "t.Rel", methodName: "Echo" }, correlationId: 1 },
        te.encode("x"),
      ),
    );
    const closed = Promise.all([silent.closedWithin(5000), quiet.closedWithin(5000)]);
    assertEquals(await closed, [true, true], "both idle connections were closed");
    await sleep(400);
    release();
    assertEquals(td.decode((await held).response), "held");
    assert(performance.now() - t0 >= 250, "not before the idle timeout");
    assertEquals(quiet.answers[0]?.correlationId, 1, "the quiet peer's call was answered first");
    for (const w of [silent, quiet]) {
      assertEquals(lastWord(w)?.code, ECLOSE);
      assertEquals(lastWord(w)?.text, "idle for 300 ms");
    }
    assertEquals(server.stats().idleTimeouts, 2);
    assert(busy.connected, "the busy client's connection is still the first one");
    assertEquals(server.stats().connectionsTotal, 3, "the busy client never had to reconnect");
  } finally {
    release();
    await held.catch(() => {});
    await busy.close();
    await server.close();
  }
});

test(
  "idle: the TCP connection of a fabric session is kept while its calls go over the fabric",
  async () => {
    const server = await serve({
      port: 0,
      services,
      fabric: { fabrics: ["shm"] },
      idleTimeoutMs: 200,
    });
    const client = await connectClient(`127.0.0.1:${server.port}`, {
      fabric: "shm",
      region: SMALL_REGION,
    });
    try {
      assertEquals(client.fabric, "shm");
      // 700 ms of calls over shared memory: nothing on the TCP connection all that time.
      const t0 = performance.now();
      while (performance.now() - t0 < 700) {
        const r = await client.call("t.Rel", "Echo", te.encode("f"), { forcePath: "EAGER" });
        assertEquals(r.path, "EAGER");
        await sleep(10);
      }
      assertEquals(server.stats().idleTimeouts, 0, "the fabric session's connection is not idle");
      assertEquals(client.fabric, "shm", "the session is still up");
    } finally {
      await client.close();
      await server.close();
    }
  },
  { skip: SHM_ONLY },
);
