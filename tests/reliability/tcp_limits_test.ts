/**
 * Connection flood and call flood (issue 12, fault 4 and the per-connection limit of fault 1):
 * past `maxConnections` a new connection is closed at once, told why (ELIMIT), and the refusal
 * is logged once per spell; past `maxInflightPerConnection` a request is answered ELIMIT at once
 * without running. The connections and calls within the limits are served as before. On main
 * there was no cap of either kind (every connection stayed open, every call ran).
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { ELIMIT } from "../../rpc/errors.ts";
import { encodeFrame } from "../../rpc/protocol/frame.ts";
import { serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { connectWatcher, lastWord, sleep, type Watcher } from "./tcp_peers.ts";

const te = new TextEncoder();
const td = new TextDecoder();

test("connection flood: past max_connections refused with the reason, logged once; others served", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    fabric: false,
    maxConnections: 6,
    services: { "t.Rel": { Echo: (r: Uint8Array) => r } },
    logger: { warn: (m) => void log.push(m) },
  });
  const good = await connect({ host: "127.0.0.1", port: server.port });
  const held: Watcher[] = [];
  const flood: Watcher[] = [];
  try {
    for (let i = 0; i < 5; i++) held.push(await connectWatcher(server.port));
    for (let i = 0; i < 20; i++) flood.push(await connectWatcher(server.port));
    const closed = await Promise.all(flood.map((w) => w.closedWithin(10_000)));
    assertEquals(closed.filter(Boolean).length, 20, "every connection past the cap is closed");
    for (const w of flood) {
      assertEquals(lastWord(w)?.code, ELIMIT);
      assertEquals(lastWord(w)?.text, "too many connections (max_connections=6)");
    }
    const heldClosed = await Promise.all(held.map((w) => w.closedWithin(100)));
    assertEquals(heldClosed.filter(Boolean).length, 0, "connections within the cap stay open");
    assertEquals(td.decode((await good.call("t.Rel", "Echo", te.encode("hi"))).response), "hi");
    assertEquals(server.stats().refusedConnections, 20);
    assertEquals(log.length, 1, `one log line for the spell: ${log.join("\n")}`);
    assert(log[0].includes("too many connections (max_connections=6)"), log[0]);
    // Below the cap again: new connections are taken (and a later spell is logged again).
    held.pop()!.close();
    for (let i = 0; i < 500 && server.stats().connections > 5; i++) await sleep(20);
    const again = await connectWatcher(server.port);
    assert(!(await again.closedWithin(200)), "a connection below the cap is accepted");
    again.write(
      encodeFrame(
        { request: { serviceName: "t.Rel", methodName: "Echo" }, correlationId: 9 },
        te.encode("x"),
      ),
    );
    for (let i = 0; i < 500 && again.answers.length === 0; i++) await sleep(10);
    assertEquals(again.answers[0]?.correlationId, 9);
    const over = await connectWatcher(server.port);
    assert(await over.closedWithin(10_000));
    assertEquals(log.length, 2, "the second spell is logged again");
    held.push(again);
  } finally {
    for (const w of [...held, ...flood]) w.close();
    await good.close();
    await server.close();
  }
});

test("call flood: past max_inflight_per_connection answered ELIMIT at once, others run", async () => {
  let running = 0, maxRunning = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = await serve({
    port: 0,
    fabric: false,
    maxInflightPerConnection: 4,
    services: {
      "t.Rel": {
        Echo: (r: Uint8Array) => r,
        async Hold(r: Uint8Array) {
          maxRunning = Math.max(maxRunning, ++running);
          await gate;
          running--;
          return r;
        },
      },
    },
  });
  const other = await connect({ host: "127.0.0.1", port: server.port });
  const peer = await connectWatcher(server.port);
  try {
    const frames = Array.from({ length: 10 }, (_, i) =>
      encodeFrame(
        { request: { serviceName: "t.Rel", methodName: "Hold" }, correlationId: i + 1 },
        te.encode(`h${i}`),
      ));
    for (const f of frames) peer.write(f);
    for (let i = 0; i < 500 && peer.answers.length < 6; i++) await sleep(10);
    assertEquals(peer.answers.length, 6, "the 6 calls over the limit are answered at once");
    for (const a of peer.answers) {
      assertEquals(a.response?.errorCode, ELIMIT);
      assertEquals(
        a.response?.errorText,
        "reached max_inflight_per_connection=4 (refused t.Rel.Hold)",
      );
    }
    assertEquals(peer.answers.map((a) => a.correlationId), [5, 6, 7, 8, 9, 10]);
    assertEquals(maxRunning, 4, "only 4 handlers ran");
    // Another connection has its own budget.
    const mine = Array.from(
      { length: 3 },
      (_, i) => other.call("t.Rel", "Hold", te.encode(`o${i}`)),
    );
    assertEquals(
      td.decode((await other.call("t.Rel", "Echo", te.encode("e"))).response),
      "e",
      "within its own limit",
    );
    release();
    assertEquals((await Promise.all(mine)).map((r) => td.decode(r.response)), ["o0", "o1", "o2"]);
    for (let i = 0; i < 500 && peer.answers.length < 10; i++) await sleep(10);
    assertEquals(peer.answers.slice(6).map((a) => [a.correlationId, a.response?.errorCode ?? 0]), [
      [1, 0],
      [2, 0],
      [3, 0],
      [4, 0],
    ]);
    assertEquals(server.stats().refusedCalls, 6);
    // Room again: the same connection's next calls run.
    peer.write(
      encodeFrame(
        { request: { serviceName: "t.Rel", methodName: "Hold" }, correlationId: 11 },
        te.encode("z"),
      ),
    );
    for (let i = 0; i < 500 && peer.answers.length < 11; i++) await sleep(10);
    assertEquals(peer.answers[10]?.correlationId, 11);
    assertEquals(peer.answers[10]?.response?.errorCode ?? 0, 0);
  } finally {
    release();
    peer.close();
    await other.close();
    await server.close();
  }
});
