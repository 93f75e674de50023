/**
 * Write batching of the TCP server, on a fake socket that counts its writes: the answers to the
 * requests of one read leave in one write, whether the handlers answer at once or a microtask
 * later; a stream split at every byte boundary is answered once per request, in order.
 */
import { ConnBase } from "../../transport/tcp/conn_base.ts";
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import { ServerConnection } from "../../rpc/tcp/server_connection.ts";
import { Dispatcher, type Handler } from "../../rpc/protocol/dispatch.ts";
import { FrameParser } from "../../rpc/protocol/frame.ts";
import { encodeRequestFrameTo, RequestMetaCache } from "../../rpc/protocol/frame_fast.ts";
import { assert, assertEquals, test } from "../harness.ts";

/** A socket whose writes are kept (one entry per write call); `feed` is a read. */
class FakeSocket extends ConnBase {
  readonly remoteAddress: NetAddress = { host: "127.0.0.1", port: 1 };
  readonly localAddress: NetAddress = { host: "127.0.0.1", port: 2 };
  readonly writes: Uint8Array[] = [];
  protected flushNow(): void {
    while (this.hasQueued) {
      const slab = this.runSlab;
      if (slab !== null) {
        const n = this.pendingWriteBytes;
        this.writes.push(slab.slice(this.runStart, this.runStart + n));
        this.wroteRun(n);
      } else {
        const b = this.takeQueued();
        this.writes.push(b.slice());
        this.wrote(b.length);
      }
    }
  }
  protected closeSocket(): void {}
  protected setSocketPaused(): void {}
  feed(chunk: Uint8Array): void {
    this.deliver(chunk);
  }
}

const LIMITS = {
  maxBodySize: 1 << 20,
  maxInflightPerConnection: 1024,
  writeHighWaterMark: 1 << 24,
  writeLowWaterMark: 1 << 23,
  headerTimeoutMs: 0,
  idleTimeoutMs: 0,
  stallTimeoutMs: 0,
};

function server(handler: Handler): FakeSocket {
  const sock = new FakeSocket();
  const quiet = { warn() {} };
  const dispatcher = new Dispatcher({ "t.S": { Echo: handler } }, quiet);
  new ServerConnection(sock, {
    dispatcher,
    logger: quiet,
    connectionClosed() {},
    protocolError() {},
    callRefused() {},
  }, LIMITS);
  return sock;
}

/** `n` request frames (ids 1..n, payload = [id, id]) back to back, as a channel writes them. */
function requests(n: number): Uint8Array {
  const buf = new Uint8Array(1 << 16);
  let used = 0;
  const sink = {
    reserve: () => used,
    writeBuffer: buf,
    commit: (k: number) => void (used += k),
  };
  const cache = new RequestMetaCache();
  for (let id = 1; id <= n; id++) {
    encodeRequestFrameTo(sink, cache.prefix("t.S", "Echo", 1000), id, new Uint8Array([id, id]));
  }
  return buf.slice(0, used);
}

/** The answers in `bytes`: [correlation id, payload]. */
function answers(bytes: Uint8Array): [number, number[]][] {
  const out: [number, number[]][] = [];
  new FrameParser((meta, payload) => out.push([Number(meta.correlationId), [...payload]]))
    .push(bytes);
  return out;
}

const expected = (n: number) =>
  Array.from({ length: n }, (_, i) => [i + 1, [i + 1, i + 1]] as [number, number[]]);

test("the 32 answers to one read leave in one socket write", () => {
  const sock = server((req) => req);
  sock.feed(requests(32));
  assertEquals(sock.writes.length, 1, "one write for the whole read");
  assertEquals(answers(sock.writes[0]), expected(32));
});

test("answers a microtask later (async handlers) still leave together, in one write", async () => {
  const sock = server((req) => Promise.resolve(req));
  sock.feed(requests(32));
  assertEquals(sock.writes.length, 0, "nothing written before the handlers settled");
  await new Promise((r) => setTimeout(r, 0));
  assertEquals(sock.writes.length, 1, "one write for the batch");
  assertEquals(answers(sock.writes[0]), expected(32));
});

test("requests split at every byte boundary: each answered once, in order", () => {
  const all = requests(3);
  for (let cut = 1; cut < all.length; cut++) {
    const sock = server((req) => req);
    sock.feed(all.slice(0, cut));
    sock.feed(all.slice(cut));
    const got = answers(new Uint8Array(sock.writes.flatMap((w) => [...w])));
    assertEquals(got, expected(3), `cut at ${cut}`);
    assert(sock.writes.length <= 2, `at most one write per read (cut at ${cut})`);
  }
});
