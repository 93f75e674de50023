/**
 * Oversized and malformed frames: the offending connection is told why — its last frame is an
 * EREQUEST answer to correlation_id 0 naming the violation — and closed; a verbus `Channel` puts
 * that reason into the error of its pending calls; everyone else is served. On main the peer
 * only saw the connection close, with no reason on the wire.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { ConnectionClosedError } from "../../errors.ts";
import { EREQUEST } from "../../rpc/errors.ts";
import { encodeFrame, FRAME_HEADER_SIZE, writeHeader } from "../../rpc/protocol/frame.ts";
import { encodeRpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { connectWatcher, lastWord, sleep } from "./tcp_peers.ts";

const te = new TextEncoder();
const td = new TextDecoder();

function raw(
  meta: Uint8Array,
  body: Uint8Array,
  metaSize = meta.length,
  bodySize?: number,
): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_SIZE + meta.length + body.length);
  writeHeader(out, 0, bodySize ?? meta.length + body.length, metaSize);
  out.set(meta, FRAME_HEADER_SIZE);
  out.set(body, FRAME_HEADER_SIZE + meta.length);
  return out;
}

test("oversized and malformed frames: told why (EREQUEST, id 0), closed; others served", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    fabric: false,
    maxBodySize: 1 << 20,
    services: { "t.Rel": { Echo: (r: Uint8Array) => r } },
    logger: { warn: (m) => void log.push(m) },
  });
  const good = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const meta = encodeRpcMeta({
      request: { serviceName: "t.Rel", methodName: "Echo" },
      correlationId: 3,
    }).slice();
    const attMeta = encodeRpcMeta({
      request: { serviceName: "t.Rel", methodName: "Echo" },
      correlationId: 4,
      attachmentSize: 99,
    }).slice();
    const cases: [string, Uint8Array, string][] = [
      [
        "oversized",
        raw(new Uint8Array(0), new Uint8Array(0), 0, 2 << 20),
        "oversize frame: body_size=2097152 exceeds max_body_size=1048576",
      ],
      [
        "bad magic",
        te.encode("GET / HTTP/1.1\r\n\r\n"),
        'bad magic: expected "PRPC" (50 52 50 43), got 47 45 54 20 ("GET ")',
      ],
      ["meta > body", raw(meta, new Uint8Array(2), meta.length + 10), "bad sizes: meta_size="],
      ["garbage meta", raw(new Uint8Array([0xff, 0xff, 0xff, 0xff]), new Uint8Array(8)), ""],
      ["attachment past the body", raw(attMeta, new Uint8Array(10)), "bad attachment_size=99"],
    ];
    for (const [name, bytes, text] of cases) {
      const w = await connectWatcher(server.port);
      w.write(bytes);
      assert(await w.closedWithin(10_000), `${name}: closed by the server`);
      const why = lastWord(w);
      assertEquals(why?.code, EREQUEST, `${name}: reason code`);
      assert(why!.text.startsWith(`protocol error: ${text}`), `${name}: ${why!.text}`);
      assertEquals(td.decode((await good.call("t.Rel", "Echo", te.encode(name))).response), name);
    }
    assertEquals(server.stats().protocolErrors, cases.length);
    assertEquals(log.length, cases.length, "logged once each");
    // A frame within the limit may arrive in many small pieces.
    const w = await connectWatcher(server.port);
    const big = encodeFrame(
      { request: { serviceName: "t.Rel", methodName: "Echo" }, correlationId: 8 },
      new Uint8Array(300_000).fill(7),
    );
    for (let off = 0; off < big.length; off += 4096) {
      w.write(big.subarray(off, off + 4096));
      if (off % (64 * 4096) === 0) await sleep(1);
    }
    for (let i = 0; i < 500 && w.answers.length === 0; i++) await sleep(10);
    assertEquals(w.answers[0]?.correlationId, 8);
    assert(!(await w.closedWithin(50)));
    w.close();
  } finally {
    await good.close();
    await server.close();
  }
});

test("a Channel reports the reason the server gave for closing its connection", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const server = await serve({
    port: 0,
    fabric: false,
    maxConnections: 1,
    services: { "t.Rel": { Hold: async (r: Uint8Array) => (await gate, r) } },
    logger: { warn: () => {} },
  });
  const first = await connect({ host: "127.0.0.1", port: server.port });
  const held = first.call("t.Rel", "Hold", te.encode("a"));
  const second = await connect({ host: "127.0.0.1", port: server.port }); // accepted by TCP, then refused
  try {
    const e = await second.call("t.Rel", "Hold", te.encode("b")).then(() => null, (e) => e);
    assert(e instanceof ConnectionClosedError, `expected ConnectionClosedError, got ${e}`);
    assert(
      e.message.includes("(the server said: ELIMIT: too many connections (max_connections=1))"),
      e.message,
    );
    release();
    assertEquals(td.decode((await held).response), "a");
  } finally {
    release();
    await first.close();
    await second.close();
    await server.close();
  }
});
