/**
 * Hostile stream frames against a verbus server, from a raw TCP peer: a feedback claiming bytes
 * never sent, a writer that ignores the window, a message past maxMessageSize in segments, DATA
 * and FEEDBACK for unknown streams, an undecodable StreamFrameMeta, an oversized STRM frame. Each
 * ends only its stream (an RST to the peer, the server's stream ended with the kind named) and
 * the connection's other calls go on; only the oversized frame (a framing error) closes it.
 */
import {
  encodeFrame,
  FRAME_HEADER_SIZE,
  FrameParser,
  writeHeader,
} from "../../rpc/protocol/frame.ts";
import type { RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import {
  decodeStreamFrameMeta,
  encodeStreamFrame,
  encodeStreamSettings,
  FRAME_DATA,
  FRAME_FEEDBACK,
  FRAME_RST,
  type StreamFrameMeta,
} from "../../rpc/protocol/stream_frame.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import type { TcpConn } from "../../transport/tcp/tcp.ts";
import { assert, assertEquals, test } from "../harness.ts";

const te = new TextEncoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw baidu_std peer that records every frame it receives. */
class RawPeer {
  readonly answers: { meta: RpcMeta; payload: Uint8Array }[] = [];
  readonly frames: { meta: StreamFrameMeta; payload: Uint8Array }[] = [];
  #closed = false;
  private constructor(readonly conn: TcpConn) {
    const p = new FrameParser((meta, payload) => this.answers.push({ meta, payload }), {
      onStreamFrame: (m, payload) => {
        this.frames.push({ meta: decodeStreamFrameMeta(m, 0, m.length), payload });
      },
    });
    conn.onData((c) => p.push(c));
    conn.onClose(() => (this.#closed = true));
  }
  static async open(port: number): Promise<RawPeer> {
    return new RawPeer(await tcp.connect({ host: "127.0.0.1", port }));
  }
  get closed(): boolean {
    return this.#closed;
  }
  /** Opens a stream with local id `id` by a call of S.M; returns the server's stream id. */
  async open(id: number, correlationId: number): Promise<number> {
    const settings = encodeStreamSettings({
      streamId: id,
      needFeedback: true,
      writable: true,
      extraStreamIds: [],
    });
    const meta: RpcMeta = {
      request: { serviceName: "S", methodName: "M" },
      correlationId,
      streamSettings: settings,
    };
    this.conn.write(encodeFrame(meta, te.encode(`open ${id}`)));
    const f = await this.frame((f) => f.meta.streamId === id && f.meta.frameType === FRAME_DATA);
    return f.meta.sourceStreamId as number;
  }
  send(meta: StreamFrameMeta, payload?: Uint8Array): void {
    this.conn.write(encodeStreamFrame(meta, payload));
  }
  async frame(
    match: (f: { meta: StreamFrameMeta; payload: Uint8Array }) => boolean,
    ms = 5000,
  ): Promise<{ meta: StreamFrameMeta; payload: Uint8Array }> {
    const end = performance.now() + ms;
    for (;;) {
      const f = this.frames.find(match);
      if (f !== undefined) return f;
      if (performance.now() > end) throw new Error("no such stream frame arrived");
      await sleep(10);
    }
  }
  /** A plain call of S.Plain on this connection; resolves with its answer's payload. */
  async plain(correlationId: number, text: string): Promise<string> {
    this.conn.write(
      encodeFrame(
        { request: { serviceName: "S", methodName: "Plain" }, correlationId },
        te.encode(text),
      ),
    );
    const end = performance.now() + 5000;
    for (;;) {
      const a = this.answers.find((a) => a.meta.correlationId === correlationId);
      if (a !== undefined) return new TextDecoder().decode(a.payload);
      if (performance.now() > end) throw new Error(`no answer to ${correlationId}`);
      await sleep(10);
    }
  }
}

test("hostile stream frames end only their stream; the connection's other calls go on", async () => {
  const byRemote = new Map<number, Stream>();
  const handler: Handler = (_req, ctx) => {
    const s = acceptStream(ctx, { maxUnreadBytes: 64 * 1024, maxMessageSize: 32 * 1024 });
    byRemote.set(Number(s.remoteId), s);
    void s.write(te.encode("hello"));
    return new Uint8Array(0);
  };
  const log: string[] = [];
  const logger = { warn: (m: string) => void log.push(m) };
  const server = await serve({
    port: 0,
    fabric: false,
    logger,
    services: { S: { M: handler, Plain: (r) => r } },
  });
  const peer = await RawPeer.open(server.port);
  try {
    // A feedback claiming more than was ever sent.
    const a = await peer.open(7, 1);
    await peer.frame((f) => f.meta.streamId === 7 && f.payload.length === 5); // "hello"
    peer.send({
      streamId: a,
      sourceStreamId: 7,
      frameType: FRAME_FEEDBACK,
      hasContinuation: false,
      consumedSize: 1e9,
    });
    await peer.frame((f) => f.meta.streamId === 7 && f.meta.frameType === FRAME_RST);
    assertEquals((await byRemote.get(7)!.ended)?.kind, "protocol");
    assert(
      /feedback says 1000000000 bytes consumed, only 5/.test(
        String((await byRemote.get(7)!.ended)?.message),
      ),
    );

    // A writer that ignores the window: past maxUnreadBytes unread.
    const b = await peer.open(8, 2);
    for (let i = 0; i < 20; i++) {
      peer.send(
        { streamId: b, sourceStreamId: 8, frameType: FRAME_DATA, hasContinuation: false },
        new Uint8Array(4096),
      );
    }
    await peer.frame((f) => f.meta.streamId === 8 && f.meta.frameType === FRAME_RST);
    assertEquals((await byRemote.get(8)!.ended)?.kind, "overrun");

    // One message past maxMessageSize, in continuation segments.
    const c = await peer.open(9, 3);
    for (let i = 0; i < 3; i++) {
      peer.send(
        { streamId: c, sourceStreamId: 9, frameType: FRAME_DATA, hasContinuation: true },
        new Uint8Array(16 * 1024),
      );
    }
    await peer.frame((f) => f.meta.streamId === 9 && f.meta.frameType === FRAME_RST);
    assertEquals((await byRemote.get(9)!.ended)?.kind, "overrun");

    // DATA for a stream that does not exist: an RST to its source; a FEEDBACK: nothing.
    peer.send(
      { streamId: 999, sourceStreamId: 55, frameType: FRAME_DATA, hasContinuation: false },
      te.encode("?"),
    );
    peer.send({
      streamId: 998,
      sourceStreamId: 56,
      frameType: FRAME_FEEDBACK,
      hasContinuation: false,
      consumedSize: 3,
    });
    await peer.frame((f) => f.meta.streamId === 55 && f.meta.frameType === FRAME_RST);

    // An undecodable StreamFrameMeta: dropped.
    const junk = new Uint8Array(FRAME_HEADER_SIZE + 4);
    writeHeader(junk, 0, 4, 4);
    junk.set([0x53, 0x54, 0x52, 0x4d]);
    junk.set([0xff, 0xff, 0xff, 0xff], FRAME_HEADER_SIZE);
    peer.conn.write(junk);

    // The connection still serves calls and streams.
    assertEquals(await peer.plain(10, "still here"), "still here");
    const d = await peer.open(11, 11);
    peer.send(
      { streamId: d, sourceStreamId: 11, frameType: FRAME_DATA, hasContinuation: false },
      te.encode("fine"),
    );
    assertEquals(new TextDecoder().decode((await byRemote.get(11)!.read())!), "fine");
    assert(
      !peer.frames.some((f) => f.meta.streamId === 56),
      "no RST for a feedback to an unknown stream",
    );
    assert(!peer.closed);

    // An oversized STRM frame is a framing error: the connection is closed.
    const big = new Uint8Array(FRAME_HEADER_SIZE);
    big.set([0x53, 0x54, 0x52, 0x4d]);
    writeHeader(big, 0, 0x7fffffff, 2);
    big.set([0x53, 0x54, 0x52, 0x4d]);
    peer.conn.write(big);
    const end = performance.now() + 5000;
    while (!peer.closed && performance.now() < end) await sleep(10);
    assert(peer.closed, "an oversized frame closes the connection");
    assert(log.some((l) => /oversize frame/.test(l)), log.join("\n"));
    assertEquals((await byRemote.get(11)!.ended)?.kind, "connection");
  } finally {
    peer.conn.close();
    await server.close();
  }
});

test("streams that stay within their own bound still meet the connection's (64 MiB unread)", async () => {
  const byRemote = new Map<number, Stream>();
  const handler: Handler = (_req, ctx) => {
    const s = acceptStream(ctx, { maxUnreadBytes: 40 << 20, maxMessageSize: 2 << 20 });
    byRemote.set(Number(s.remoteId), s); // never reads
    return new Uint8Array(0);
  };
  const logger = { warn: () => {} };
  const server = await serve({
    port: 0,
    fabric: false,
    logger,
    services: { S: { M: handler, Plain: (r) => r } },
  });
  const peer = await RawPeer.open(server.port);
  try {
    const chunk = new Uint8Array(1 << 20);
    for (const id of [21, 22, 23]) {
      const to = await peer.open(id, id);
      for (let i = 0; i < 24; i++) {
        peer.send({
          streamId: to,
          sourceStreamId: id,
          frameType: FRAME_DATA,
          hasContinuation: false,
        }, chunk);
      }
    }
    await peer.frame((f) => f.meta.streamId === 23 && f.meta.frameType === FRAME_RST, 20_000);
    const end = await byRemote.get(23)!.ended;
    assertEquals(end?.kind, "overrun");
    assert(/connection's 67108864 unread bytes/.test(end!.message), end!.message);
    assertEquals(byRemote.get(21)!.unreadBytes, 24 << 20);
    assertEquals(byRemote.get(22)!.unreadBytes, 24 << 20);
    assertEquals(await peer.plain(99, "on"), "on");
    // what the reset stream held is released: a reader of the others goes on
    for (let i = 0; i < 24; i++) await byRemote.get(21)!.read();
    assertEquals(byRemote.get(21)!.unreadBytes, 0);
  } finally {
    peer.conn.close();
    await server.close();
  }
});
