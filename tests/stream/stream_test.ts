/**
 * brpc Streaming RPC between verbus peers over TCP: a stream opened by a call and accepted by
 * its handler, messages both ways, large messages in segments, graceful close from either side,
 * reset, refusal, flow control (a reader that stops reading stops the writer; memory bounded).
 */
import { type Channel, connect } from "../../rpc/tcp/channel.ts";
import { RpcError } from "../../rpc/errors.ts";
import type { Handler } from "../../rpc/protocol/dispatch.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { acceptStream, acceptStreams } from "../../rpc/stream/accept.ts";
import { openStream, openStreams } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { streamEchoHandler } from "../fixtures/stream_echo.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn` against a server whose `S.M` handler is `handler`; closes both after. */
export async function withStreamServer(
  handler: Handler,
  fn: (ch: Channel, server: Server) => Promise<void>,
): Promise<void> {
  const server = await serve({ port: 0, services: { S: { M: handler, Plain: (r) => r } } });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    await fn(ch, server);
  } finally {
    await ch.close();
    await server.close();
  }
}

test("a stream opened by a call: the answer, messages both ways, close from the client", async () => {
  const seen: Stream[] = [];
  await withStreamServer(streamEchoHandler(seen), async (ch) => {
    const { stream, response } = await openStream(ch, "S", "M", te.encode("hi"));
    assertEquals(td.decode(response), "accepted hi");
    assert(stream.open);
    for (let i = 0; i < 100; i++) await stream.write(te.encode(`m${i}`));
    for (let i = 0; i < 100; i++) assertEquals(td.decode((await stream.read())!), `m${i}`);
    stream.close();
    assertEquals(await stream.ended, undefined);
    assertEquals(await seen[0].ended, undefined);
    assertEquals(await seen[0].read(), undefined);
    // the connection goes on with plain calls
    assertEquals(td.decode((await ch.call("S", "Plain", te.encode("x"))).response), "x");
  });
});

test("server-streaming: writes made before the answer follow it, then a close", async () => {
  await withStreamServer((_req, ctx) => {
    const s = acceptStream(ctx);
    for (let i = 0; i < 5; i++) void s.write(te.encode(`n${i}`));
    s.close();
    return new Uint8Array(0);
  }, async (ch) => {
    const { stream } = await openStream(ch, "S", "M", new Uint8Array(0));
    const got: string[] = [];
    for await (const m of stream) got.push(td.decode(m));
    assertEquals(got, ["n0", "n1", "n2", "n3", "n4"]);
    assertEquals(await stream.ended, undefined);
  });
});

test("a 3 MiB message goes in segments and arrives whole", async () => {
  await withStreamServer(streamEchoHandler(), async (ch) => {
    const { stream } = await openStream(ch, "S", "M", new Uint8Array(0), {
      stream: { maxBufSize: 8 << 20 },
    });
    const big = new Uint8Array(3 << 20);
    for (let i = 0; i < big.length; i += 4096) big[i] = i >> 12;
    await stream.write(big);
    const back = (await stream.read())!;
    assertEquals(back.length, big.length);
    for (let i = 0; i < big.length; i += 4096) assertEquals(back[i], (i >> 12) & 0xff);
    stream.close();
  });
});

test("a handler that does not accept: the opening call is refused as a stream", async () => {
  await withStreamServer((req) => req, async (ch) => {
    const e = await assertRejects(() => openStream(ch, "S", "M", te.encode("x")), StreamError);
    assertEquals(e.kind, "refused");
    assertEquals(td.decode((await ch.call("S", "Plain", te.encode("y"))).response), "y");
  });
});

test("a handler that accepts then fails: RpcError to the client, the server's stream ends", async () => {
  const seen: Stream[] = [];
  await withStreamServer((_r, ctx) => {
    seen.push(acceptStream(ctx));
    throw new RpcError(1003, "no thanks");
  }, async (ch) => {
    await assertRejects(() => openStream(ch, "S", "M", new Uint8Array(0)), RpcError);
    const end = await seen[0].ended;
    assertEquals(end?.kind, "refused");
  });
});

test("reset from the server: the client's reads fail with kind reset", async () => {
  await withStreamServer((_r, ctx) => {
    const s = acceptStream(ctx);
    setTimeout(() => s.reset("bye"), 20);
    return new Uint8Array(0);
  }, async (ch) => {
    const { stream } = await openStream(ch, "S", "M", new Uint8Array(0));
    const e = await assertRejects(() => stream.read(), StreamError);
    assertEquals(e.kind, "reset");
    await assertRejects(() => stream.write(te.encode("late")), StreamError);
  });
});

test("a reader that stops reading stops the writer at the window; memory stays bounded", async () => {
  const seen: Stream[] = [];
  await withStreamServer((_r, ctx) => {
    seen.push(acceptStream(ctx)); // never reads
    return new Uint8Array(0);
  }, async (ch) => {
    const { stream } = await openStream(ch, "S", "M", new Uint8Array(0), {
      stream: { maxBufSize: 64 * 1024 },
    });
    const chunk = new Uint8Array(4096);
    let written = 0;
    let blocked = false;
    for (let i = 0; i < 100; i++) {
      const p = stream.write(chunk).then(() => written++);
      const r = await Promise.race([p.then(() => "ok"), sleep(50).then(() => "blocked")]);
      if (r === "blocked") {
        blocked = true;
        break;
      }
    }
    assert(blocked, "the writer never blocked");
    assertEquals(written, 16); // 64 KiB window of 4 KiB messages
    assert(stream.unconsumedBytes <= 64 * 1024 + 4096);
    assert(seen[0].unreadBytes <= 64 * 1024 + 4096, `unread ${seen[0].unreadBytes}`);
    // the reader catches up (reads what was queued): its feedback lets the writer go on
    for (let i = 0; i < 16; i++) await seen[0].read();
    await sleep(50);
    assert(written > 16, `writer still blocked at ${written}`);
    stream.reset();
  });
});

test("the opening call's answer carries the handler's response headers (user_fields)", async () => {
  await withStreamServer((_r, ctx) => {
    acceptStream(ctx).close();
    ctx.responseUserFields = new Map([["x-answer", "42"]]);
    return new Uint8Array(0);
  }, async (ch) => {
    const r = await ch.call("S", "Plain", new Uint8Array(0)); // a plain call first: no headers
    assertEquals(r.userFields, undefined);
    const table = await ch._streams();
    const opened = await openStream(ch, "S", "M", new Uint8Array(0));
    assertEquals(opened.userFields?.get("x-answer"), "42");
    assertEquals(await opened.stream.read(), undefined);
    assertEquals(table.size, 0);
  });
});

test("batch streams: openStreams(3) pairs with acceptStreams in order; acceptStream refuses a batch", async () => {
  let refused = "";
  await withStreamServer((_r, ctx) => {
    try {
      acceptStream(ctx);
    } catch (e) {
      refused = (e as Error).message;
    }
    const all = acceptStreams(ctx);
    all.forEach((s, i) => {
      (async () => {
        for await (const m of s) await s.write(te.encode(`${i}:${td.decode(m)}`));
        s.close();
      })().catch(() => {});
    });
    return new Uint8Array(0);
  }, async (ch) => {
    const { streams } = await openStreams(ch, "S", "M", new Uint8Array(0), 3);
    assert(/opened 3 streams/.test(refused), refused);
    assertEquals(streams.length, 3);
    for (const [i, s] of streams.entries()) await s.write(te.encode(`hi${i}`));
    for (const [i, s] of streams.entries()) {
      assertEquals(td.decode((await s.read())!), `${i}:hi${i}`);
    }
    for (const s of streams) s.close();
    await assertRejects(() => openStreams(ch, "S", "M", new Uint8Array(0), 0));
  });
});
