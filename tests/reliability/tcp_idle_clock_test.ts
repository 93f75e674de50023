/**
 * The idle clock of a server connection, driven by hand (a fake socket, the sweep's `now` given
 * by the test, no timer): a call that outlasted the idle timeout does not make its connection
 * "idle" the moment it is answered (the client's next call would race the close), and a sweep
 * that runs late after a stalled event loop does not close a connection whose bytes were waiting
 * unread — it takes a second sweep in a row that still finds it idle. Both were seen as a flake of
 * `tcp_slowloris_test.ts` under load (a third idle timeout: the busy client's connection, closed
 * right after its held call was answered).
 */
import { ConnBase } from "../../transport/tcp/conn_base.ts";
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import { ECLOSE } from "../../rpc/errors.ts";
import { ServerConnection } from "../../rpc/tcp/server_connection.ts";
import { Dispatcher, type Handler } from "../../rpc/protocol/dispatch.ts";
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import type { RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { assertEquals, test } from "../harness.ts";

/** A socket whose writes are kept; `feed` is a read. */
class FakeSocket extends ConnBase {
  readonly remoteAddress: NetAddress = { host: "127.0.0.1", port: 1 };
  readonly localAddress: NetAddress = { host: "127.0.0.1", port: 2 };
  readonly answers: RpcMeta[] = [];
  readonly #parser = new FrameParser((m) => void this.answers.push(structuredClone(m)));
  protected flushNow(): void {
    while (this.hasQueued) {
      const slab = this.runSlab;
      if (slab !== null) {
        const n = this.pendingWriteBytes;
        this.#parser.push(slab.slice(this.runStart, this.runStart + n));
        this.wroteRun(n);
      } else {
        const b = this.takeQueued();
        this.#parser.push(b.slice());
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

const IDLE_MS = 300;
const LIMITS = {
  maxBodySize: 1 << 20,
  maxInflightPerConnection: 16,
  writeHighWaterMark: 1 << 24,
  writeLowWaterMark: 1 << 23,
  headerTimeoutMs: 0,
  idleTimeoutMs: IDLE_MS,
  stallTimeoutMs: 0,
};

function accept(handler: Handler): { sock: FakeSocket; conn: ServerConnection } {
  const sock = new FakeSocket();
  const quiet = { warn() {} };
  const dispatcher = new Dispatcher({ "t.S": { Echo: handler } }, quiet);
  const conn = new ServerConnection(sock, {
    dispatcher,
    logger: quiet,
    connectionClosed() {},
    protocolError() {},
    callRefused() {},
  }, LIMITS);
  return { sock, conn };
}

const request = (id: number) =>
  encodeFrame(
    { request: { serviceName: "t.S", methodName: "Echo" }, correlationId: id },
    new Uint8Array([id]),
  );

/** Runs the sweep's check at `now` (the test's clock, not the wall clock). */
const sweep = (conn: ServerConnection, now: number) => conn.expired(now, LIMITS);

test("idle clock: a call longer than the idle timeout leaves its connection open at its answer", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const { sock, conn } = accept(async (req) => (await gate, req));
  const t = Date.now();
  sock.feed(request(1));
  assertEquals(sweep(conn, t + 1000), null, "a call in flight is not idle");
  release();
  await gate;
  await new Promise((r) => setTimeout(r, 0)); // the handler's answer is written
  assertEquals(sock.answers.map((m) => m.correlationId), [1], "answered");
  // Nothing was received for 1000 ms, but the connection was busy until just now.
  assertEquals(sweep(conn, t + 1001), null, "not idle the moment its call was answered");
  assertEquals(sweep(conn, t + 1001 + IDLE_MS - 1), null, "nor before the timeout has passed");
  assertEquals(sweep(conn, t + 1001 + IDLE_MS), null, "first sweep to find it idle: not yet");
  assertEquals(sweep(conn, t + 1001 + IDLE_MS + 75), "idle", "the second one closes it");
  await new Promise((r) => setTimeout(r, 0)); // the reason is flushed
  const last = sock.answers.at(-1)!;
  assertEquals(
    [last.correlationId, last.response?.errorCode, last.response?.errorText],
    [0, ECLOSE, `idle for ${IDLE_MS} ms`],
  );
  assertEquals(sweep(conn, t + 5000), null, "closed once");
});

test("idle clock: a late sweep does not close a connection whose bytes it has not read yet", () => {
  const { sock, conn } = accept((req) => req);
  const t = Date.now();
  // The event loop stalled; the sweep's timer runs before the read that holds the request.
  assertEquals(sweep(conn, t + 5000), null, "one late sweep decides nothing");
  sock.feed(request(7));
  assertEquals(sock.answers.map((m) => m.correlationId), [7], "the waiting request was served");
  assertEquals(sweep(conn, t + 5001), null, "it was received and answered: not idle");
  assertEquals(sweep(conn, t + 5001 + IDLE_MS), null, "idle again, first sighting");
  assertEquals(sweep(conn, t + 5001 + IDLE_MS + 1), "idle");
});
