/**
 * Streams against stock brpc (apache/brpc `example/streaming_echo_c++`), both ways. Needs the
 * built example: VERBUS_BRPC_STREAMING_ECHO = the directory holding `streaming_echo_server` and
 * `streaming_echo_client` (README: "Streams" says how to build them); skipped without it.
 *
 * - verbus client → brpc server: the stream is accepted (`brpc::StreamAccept`), small messages
 *   and 12 MiB through brpc's default 2 MiB window (only its FEEDBACK frames let it through)
 *   reach the server's handler, and our CLOSE ends its stream.
 * - brpc client → verbus server: `brpc::StreamCreate` + an Echo call open a stream that a verbus
 *   handler accepts; the client's messages arrive in order, its close ends ours cleanly, and a
 *   write to a brpc stream without a handler (writable=false) is refused.
 *
 * Batch streams (`example/streaming_batch_echo_c++`, VERBUS_BRPC_STREAMING_BATCH_ECHO = its
 * built directory): 3 streams opened by one call, paired in order, both ways — each side's
 * messages echoed back on the stream they came on.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { type Channel, connect } from "../../rpc/tcp/channel.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { acceptStream, acceptStreams } from "../../rpc/stream/accept.ts";
import { openStream, openStreams } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { decodeEchoMessage, encodeEchoMessage } from "../../examples/demo/brpc_echo.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { assert, assertEquals, test } from "../harness.ts";

const DIR = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env
  .VERBUS_BRPC_STREAMING_ECHO;
const SKIP = DIR
  ? false
  : "set VERBUS_BRPC_STREAMING_ECHO to brpc's built example/streaming_echo_c++ (README: Streams)";
const BATCH = (globalThis as { process?: { env: Record<string, string | undefined> } }).process
  ?.env.VERBUS_BRPC_STREAMING_BATCH_ECHO;
const SKIP_BATCH = BATCH ? false : "set VERBUS_BRPC_STREAMING_BATCH_ECHO to brpc's built " +
  "example/streaming_batch_echo_c++ (README: Streams)";
const ECHO = "example.EchoService";
const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A child with its output gathered. */
function start(
  bin: string,
  args: string[],
  dir = DIR,
): { child: ChildProcess; log: () => string; exited: Promise<void> } {
  const child = spawn(`${dir}/${bin}`, args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Uint8Array) => void (out += String(d)));
  child.stderr!.on("data", (d: Uint8Array) => void (out += String(d)));
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return { child, log: () => out, exited };
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

async function freePort(): Promise<number> {
  const l = await tcp.listen({ host: "127.0.0.1", port: 0, onConnection: (c) => c.close() });
  const port = l.port;
  await l.close(); // the port is free only then (Deno: an event-loop turn later)
  return port;
}

type Started = ReturnType<typeof start>;

/**
 * Runs `fn` with the stock brpc server `bin` (from `dir`) serving on a free port and a verbus
 * channel to it; a failure carries the server's output; the channel and the server are closed
 * after.
 */
async function withBrpcServer(
  bin: string,
  dir: string | undefined,
  fn: (ch: Channel, srv: Started) => Promise<void>,
): Promise<void> {
  const port = await freePort();
  const srv = start(bin, [`--port=${port}`], dir);
  try {
    await until("server listening", () => /is serving on port/.test(srv.log()));
    const ch = await connect({ host: "127.0.0.1", port });
    try {
      await fn(ch, srv);
    } finally {
      await ch.close();
    }
  } catch (e) {
    throw new Error(`${(e as Error).message}\n--- server output ---\n${srv.log()}`, { cause: e });
  } finally {
    srv.child.kill("SIGINT");
    await srv.exited;
  }
}

/**
 * Runs `fn` with the stock brpc client `bin` (from `dir`) calling the verbus server `server`; a
 * failure carries the client's output; the client is killed and the server closed after.
 */
async function withBrpcClient(
  bin: string,
  dir: string | undefined,
  server: Server,
  fn: (cli: Started) => Promise<void>,
): Promise<void> {
  const cli = start(bin, [`--server=127.0.0.1:${server.port}`], dir);
  try {
    await fn(cli);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n--- client output ---\n${cli.log()}`, { cause: e });
  } finally {
    cli.child.kill("SIGKILL");
    await cli.exited;
    await server.close();
  }
}

test("verbus client → stock brpc streaming_echo_server", async () => {
  await withBrpcServer("streaming_echo_server", DIR, async (ch, srv) => {
    const { stream, response } = await openStream(ch, ECHO, "Echo", encodeEchoMessage("verbus"));
    assertEquals(decodeEchoMessage(response, "EchoResponse"), "Accepted stream");
    for (let i = 0; i < 3; i++) {
      await stream.write(te.encode("abcdefghijklmnopqrstuvwxyz"));
      await stream.write(te.encode("0123456789"));
    }
    const big = new Uint8Array(3 << 20).fill(0x41);
    for (let i = 0; i < 4; i++) await stream.write(big); // past the 2 MiB window: feedback
    await until("all consumed", () => stream.unconsumedBytes === 0);
    stream.close();
    await until("the server's on_closed", () => /is closed/.test(srv.log()));
    const got = srv.log().match(/msg\[\d+\]=(abcdefghijklmnopqrstuvwxyz|0123456789)/g) ?? [];
    assertEquals(got.length, 6, srv.log());
  });
}, { skip: SKIP, timeoutMs: 60_000 });

test("stock brpc streaming_echo_client → verbus server", async () => {
  const streams: Stream[] = [];
  const got: string[] = [];
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: {
      [ECHO]: {
        Echo: (req, ctx) => {
          assertEquals(decodeEchoMessage(req), "I'm a RPC to connect stream");
          const s = acceptStream(ctx);
          streams.push(s);
          (async () => {
            for await (const m of s) got.push(td.decode(m));
          })().catch(() => {});
          return encodeEchoMessage("Accepted by verbus");
        },
      },
    },
  });
  await withBrpcClient("streaming_echo_client", DIR, server, async (cli) => {
    await until("4 messages", () => got.length >= 4);
    assertEquals(got.slice(0, 4), [
      "abcdefghijklmnopqrstuvwxyz",
      "0123456789",
      "abcdefghijklmnopqrstuvwxyz",
      "0123456789",
    ]);
    // brpc's client stream has no handler: it said writable=false, so nothing is sent to it.
    const e = await streams[0].write(te.encode("x")).then(() => null, (e) => e);
    assert(e !== null && /writable=false/.test(e.message), `write was not refused: ${e}`);
    cli.child.kill("SIGINT"); // asked to quit: the client closes its stream
    assertEquals(await streams[0].ended, undefined);
  });
}, { skip: SKIP, timeoutMs: 60_000 });

test("verbus openStreams(3) → stock brpc streaming_batch_echo_server", async () => {
  await withBrpcServer("streaming_batch_echo_server", BATCH, async (ch, srv) => {
    const { streams, response } = await openStreams(ch, ECHO, "Echo", encodeEchoMessage("v"), 3);
    assertEquals(decodeEchoMessage(response, "EchoResponse"), "Accepted stream");
    for (const [i, s] of streams.entries()) await s.write(te.encode(`to stream ${i}`));
    for (const [i, s] of streams.entries()) {
      assertEquals(td.decode((await s.read())!), `to stream ${i}`); // echoed on its own stream
    }
    for (const s of streams) s.close();
    await until(
      "the server's on_closed x3",
      () => (srv.log().match(/is closed/g) ?? []).length >= 3,
    );
  });
}, { skip: SKIP_BATCH, timeoutMs: 60_000 });

test("stock brpc streaming_batch_echo_client → verbus acceptStreams", async () => {
  const got: string[][] = [[], [], []];
  let all: Stream[] = [];
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: {
      [ECHO]: {
        Echo: (_req, ctx) => {
          all = acceptStreams(ctx);
          all.forEach((s, i) => {
            (async () => {
              for await (const m of s) {
                got[i].push(td.decode(m));
                await s.write(m); // echoed back: the brpc client has a handler (writable)
              }
            })().catch(() => {});
          });
          return encodeEchoMessage("Accepted by verbus");
        },
      },
    },
  });
  await withBrpcClient("streaming_batch_echo_client", BATCH, server, async (cli) => {
    await until("a message on each stream", () => got.every((g) => g.length >= 1));
    assertEquals(got.map((g) => g[0]), ["abcdefghijklmnopqrstuvwxyz", "0123456789", "hello world"]);
    await until(
      "the client got the echoes",
      () => /Received from Stream=.*hello world/.test(cli.log()),
    );
    cli.child.kill("SIGINT");
    assertEquals(await all[0].ended, undefined); // the client closes its first stream
  });
}, { skip: SKIP_BATCH, timeoutMs: 60_000 });
