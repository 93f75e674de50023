/**
 * brpc streams over the fabric session (rpc/stream/stream_ring.ts), over the fabric the run
 * selects (shm, simulated URMA, verbs in the VM): a stream opened through a client with a live
 * session rides it (`stream.carrier`) with messages both ways and large messages across the
 * ring's wrap; a reader that stops reading stops the writer and bounds what is held; a session
 * that fails ends its streams with a clear error and later streams go over TCP; a frame for an
 * unknown stream is answered RST and the session goes on; a peer that breaks the ring (a tail
 * past it, credit for bytes never written, bytes that are not stream frames, a call frame) fails
 * that session only, its streams ended kind protocol. (The demo's Count reporting the stream's
 * fabric: tests/cli/stream_count_test.ts.)
 */
import type { Handler } from "../../rpc/protocol/dispatch.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { CONTROL } from "../../rpc/region/layout.ts";
import { encodeFrame } from "../../rpc/protocol/frame.ts";
import { encodeStreamFrame, FRAME_DATA } from "../../rpc/protocol/stream_frame.ts";
import { streamEchoHandler } from "../fixtures/stream_echo.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { client, FABRIC_LABEL, pattern, startServer, until } from "./util.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `S.Echo` echoes every message and closes when the client does; `S.Hold` reads nothing. */
function streamService(seen: Stream[]) {
  const echo = streamEchoHandler(seen);
  const hold: Handler = (_req, ctx) => {
    seen.push(acceptStream(ctx, { maxUnreadBytes: 8 * 1024 * 1024 }));
    return new Uint8Array(0);
  };
  return { S: { Echo: echo, Hold: hold } };
}

test(
  "a stream through a client on the fabric rides the session: messages both ways, large ones across the ring's wrap",
  async () => {
    const seen: Stream[] = [];
    const { server } = await startServer({}, streamService(seen));
    const c = await client(server);
    try {
      assertEquals(c.fabric, FABRIC_LABEL);
      const { stream, response } = await openStream(c, "S", "Echo", te.encode("hi"));
      assertEquals(td.decode(response), "accepted hi");
      assertEquals(stream.carrier, c.fabric);
      assertEquals(seen[0].carrier, c.fabric);
      for (let i = 0; i < 200; i++) await stream.write(te.encode(`m${i}`));
      for (let i = 0; i < 200; i++) assertEquals(td.decode((await stream.read())!), `m${i}`);
      // Larger than the 256 KiB ring: the frame crosses the wrap in pieces.
      for (const n of [100_000, 700_000, 3 * 1024 * 1024]) {
        const big = pattern(n, n & 0xff);
        await stream.write(big);
        const back = (await stream.read())!;
        assertEquals(back.length, n);
        assertEquals(back, big);
      }
      stream.close();
      assertEquals(await stream.ended, undefined);
      assertEquals(await seen[0].ended, undefined);
      // Nothing went over the TCP connection's streams.
      assertEquals((await c.channel._streams()).stats.opened, 0);
    } finally {
      await c.close();
      await server.close();
    }
  },
  { timeoutMs: 120_000 },
); // 3 MiB over Soft-RoCE in the emulated VM takes ~30 s

test("a reader that stops reading stops the writer: the window bounds what is held, reading resumes it", async () => {
  const seen: Stream[] = [];
  const { server } = await startServer({}, streamService(seen));
  const c = await client(server);
  try {
    const window = 256 * 1024;
    const { stream } = await openStream(c, "S", "Hold", new Uint8Array(0), {
      stream: { maxBufSize: window },
    });
    assertEquals(stream.carrier, c.fabric);
    const msg = pattern(16 * 1024, 7);
    let written = 0, blocked = false;
    for (let i = 0; i < 1000; i++) {
      const w = stream.write(msg);
      const done = await Promise.race([w.then(() => true), sleep(300).then(() => false)]);
      if (!done) {
        blocked = true;
        // Nothing read: the writer waits with at most the window unconsumed, the reader holds it.
        assert(stream.unconsumedBytes <= window + msg.length, `${stream.unconsumedBytes}`);
        await until(() => seen[0].unreadBytes === stream.unconsumedBytes, 5000, "all to arrive");
        assert(seen[0].unreadBytes <= window + msg.length, `${seen[0].unreadBytes}`);
        // The reader reads: the writer goes on.
        let read = 0;
        while (read < written) read += (await seen[0].read())!.length;
        await w;
        written += msg.length;
        break;
      }
      written += msg.length;
    }
    assert(blocked, "the writer never waited");
    const reader = (async () => {
      for (let i = 0; i < 51; i++) assertEquals((await seen[0].read())!.length, msg.length);
    })();
    for (let i = 0; i < 50; i++) await stream.write(msg); // past the window: the reader reads
    await reader;
    stream.close();
    assertEquals(await seen[0].ended, undefined);
  } finally {
    await c.close();
    await server.close();
  }
});

test("a session that fails ends its streams (connection), the next stream goes over TCP", async () => {
  const seen: Stream[] = [];
  const { server } = await startServer({}, streamService(seen));
  const c = await client(server, { reestablishMs: 0 });
  try {
    const { stream } = await openStream(c, "S", "Echo", new Uint8Array(0));
    await stream.write(te.encode("before"));
    assertEquals(td.decode((await stream.read())!), "before");
    c.session!.fail("test: the fabric went away");
    const e = await assertRejects(() => stream.read(), StreamError);
    assertEquals(e.kind, "connection");
    assert(
      /test: the fabric went away/.test(e.message) && /cannot move to TCP/.test(e.message),
      e.message,
    );
    await assertRejects(() => stream.write(te.encode("x")), StreamError);
    await until(() => seen[0].closed, 5000, "the server's side to end");
    // A new stream rides the TCP connection.
    const again = await openStream(c, "S", "Echo", new Uint8Array(0));
    assertEquals(again.stream.carrier, "tcp");
    await again.stream.write(te.encode("after"));
    assertEquals(td.decode((await again.stream.read())!), "after");
    again.stream.close();
  } finally {
    await c.close();
    await server.close();
  }
});

const NONE = new Uint8Array(0), TAIL = CONTROL.streamTail;

/** A whole baidu_std call frame (not a stream frame). */
const CALL_FRAME = encodeFrame({ correlationId: 1 }, te.encode("call"));

/**
 * Writes `bytes` into the server's stream ring through the client's endpoint at `tail` (where
 * the client's pipe stands: its opening calls and frames went through the ring before), then
 * `value` into the control word `word` of the server's page: for the tail, `value` bytes past
 * `tail`; else as is (the credit of the server's writes).
 */
function inject(
  c: Awaited<ReturnType<typeof client>>,
  bytes: Uint8Array,
  value: number,
  word: number = CONTROL.streamTail,
  tail = 0,
): void {
  const s = c.session!, { server } = s.layouts;
  const at = tail & (server.streamRing.size - 1);
  assert(at + bytes.length <= server.streamRing.size, "the injected bytes would wrap");
  if (bytes.length > 0) s.endpoint.write(0, server.streamRing.offset + at, bytes, 0);
  if (word === CONTROL.streamTail) value = (tail + value) >>> 0;
  s.endpoint.writeU32(0, server.control.offset + word, value, 0);
  s.endpoint.flush();
  s.endpoint.kick();
}

test("hostile stream frames: an unknown stream id is answered RST and the session goes on", async () => {
  const { server } = await startServer({}, streamService([]));
  const c = await client(server);
  try {
    const frame = encodeStreamFrame(
      { streamId: 999, sourceStreamId: 5, frameType: FRAME_DATA, hasContinuation: false },
      te.encode("who?"),
    );
    inject(c, frame, frame.length);
    const ss = [...server.fabric!.sessions][0];
    await until(() => ss.streams.table.stats.unknown === 1, 5000, "the frame to be seen");
    assertEquals(ss.streams.stats.bytesOut > 0, true); // the RST to stream 5
    const r = await c.call("verbus.Demo", "Echo", te.encode("still here"));
    assertEquals(r.path, "EAGER");
    assertEquals(server.fabric!.sessions.size, 1);
  } finally {
    await c.close();
    await server.close();
  }
});

for (
  const [what, bytes, value, word, why] of [
    ["a tail past the ring", NONE, 1 << 20, TAIL, /ahead, past the 262144-byte ring/],
    ["bytes that are not stream frames", te.encode("GARBAGE!".repeat(8)), 64, TAIL, /no stream/],
    ["a call frame in the ring", CALL_FRAME, CALL_FRAME.length, TAIL, /call frame/],
    ["credit for bytes never written", NONE, 1 << 20, CONTROL.streamCredit, /more than were/],
  ] as const
) {
  test(`hostile stream ring: ${what} fails that session only, its streams end (protocol), the server serves on`, async () => {
    const seen: Stream[] = [];
    const { server, log } = await startServer({}, streamService(seen));
    const c = await client(server);
    const other = await client(server);
    try {
      await openStream(other, "S", "Echo", new Uint8Array(0)); // a stream of another session
      await openStream(c, "S", "Echo", new Uint8Array(0));
      const victim = seen[1];
      inject(c, bytes, value, word, c._fabricStreams()!.stats.bytesOut >>> 0);
      const e = await victim.ended;
      assertEquals(e?.kind, "protocol");
      assert(why.test(e!.message), e!.message);
      await until(() => server.fabric!.sessions.size === 1, 5000, "the session to close");
      assert(log.warnings.some((w) => /stream pipe/.test(w)), log.warnings.join("\n"));
      assert(!seen[0].closed, "the other session's stream ended too");
      await seen[0].write(te.encode("on"));
      const r = await other.call("verbus.Demo", "Echo", te.encode("x"));
      assertEquals(r.path, "EAGER");
    } finally {
      await c.close();
      await other.close();
      await server.close();
    }
  });
}
