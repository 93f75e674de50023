/**
 * Streams a caller leaves early. A Connect server-streaming or bidi call whose caller breaks out
 * of its `for await` (connect-es tells the transport nothing: its iterator has no `return()`):
 * once the caller let go of the messages, the stream is reset — the server's implementation sees
 * its context's signal aborted (Canceled) and its generator returned, and neither side holds the
 * stream afterwards; over a shm session and over TCP. A client that cancels aborts the server's
 * signal too. A verbus stream whose reader leaves its `for await` early is closed at once (the
 * server's writer is not held), unless it read with `messages({ keepOpen: true })`.
 */
import v8 from "node:v8";
import vm from "node:vm";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { GreeterService } from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { abandonStats } from "../../rpc/connect/stream_abandon.ts";
import type { VerbusTransport } from "../../rpc/connect/transport.ts";
import { connect } from "../../rpc/client/client.ts";
import { serve } from "../../rpc/server/server.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { SMALL_REGION } from "../fabric/util.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { endless, type EndlessLog, PLANES, withServer, withTransport } from "./util.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const g = globalThis as { Bun?: { gc(full: boolean): void } };

/** A full collection, on either runtime (Deno: V8's gc, exposed at run time). */
const collect: () => void = g.Bun
  ? () => g.Bun!.gc(true)
  : (v8.setFlagsFromString("--expose-gc"), vm.runInNewContext("gc"));

/** Collects (and lets finalizers run) until `done()`, at most ~10 s. */
async function collectUntil(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) {
    collect();
    await sleep(50);
  }
  assert(done(), `${what} (after collections)`);
}

async function until(done: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 250 && !done(); i++) await sleep(20);
  assert(done(), what);
}

/** The streams the transport's client has open (on its fabric session or its connection). */
async function clientStreams(t: VerbusTransport): Promise<number> {
  const c = await t.client();
  const onFabric = c._fabricStreams()?.table.size ?? 0;
  return onFabric + (await c.channel._streams()).size;
}

/**
 * Reads `n` messages of a server stream and breaks out, in a frame of its own (so that nothing
 * of the loop stays reachable from the caller's frame).
 */
async function readAndBreak(t: VerbusTransport, n: number): Promise<number> {
  const c = createClient(GreeterService, t);
  let got = 0;
  for await (const _ of c.greetMany({ name: "x", times: 0 })) if (++got === n) break;
  return got;
}

/** Sends names to a bidi chat, reads `n` answers and breaks out (its own frame, as above). */
async function chatAndBreak(t: VerbusTransport, n: number): Promise<number> {
  const c = createClient(GreeterService, t);
  async function* names() {
    for (let i = 0;; i++) {
      yield { name: `p${i}` };
      await sleep(5);
    }
  }
  let got = 0;
  for await (const _ of c.chat(names())) if (++got === n) break;
  return got;
}

for (const plane of PLANES) {
  test(`a server stream the caller breaks out of is reset once dropped: the server's signal aborts, nothing held (${plane.name})`, async () => {
    const log: EndlessLog = { yielded: 0 };
    await withServer([[GreeterService, endless(log) as never]], async (server) => {
      await withTransport(server, plane.options, async (t) => {
        const dropped = abandonStats.dropped;
        assertEquals(await readAndBreak(t, 3), 3);
        assertEquals((await t.client()).fabric, plane.fabric);
        await collectUntil(() => log.ended !== undefined, "the server's implementation ended");
        assertEquals(log.ended, "aborted");
        assert(log.signal?.aborted, "the server's context signal was not aborted");
        assert(log.reason instanceof ConnectError, String(log.reason));
        assertEquals((log.reason as ConnectError).code, Code.Canceled);
        assert(abandonStats.dropped > dropped, "the dropped iterable was not seen");
        for (let i = 0; i < 100 && (await clientStreams(t)) > 0; i++) await sleep(20);
        const at = log.yielded;
        await sleep(100);
        assertEquals(log.yielded, at, "it yields no more");
        assertEquals(await clientStreams(t), 0, "the client still holds the stream");
        if (plane.fabric === "shm") {
          const [session] = [...server.fabric!.sessions.values()];
          await until(() => session.streams.table.size === 0, "the server holds the stream");
        }
        // The connection goes on: a whole stream after it.
        const all = [];
        const c = createClient(GreeterService, t);
        const log2 = log.yielded;
        for await (const m of c.greetMany({ name: "y", times: 0 })) {
          all.push(m);
          if (all.length === 2) break;
        }
        assert(log.yielded > log2);
      });
    });
  });
}

test("a bidi call the caller breaks out of is reset once dropped: the server's requests end, its signal aborts", async () => {
  const log: EndlessLog = { yielded: 0 };
  await withServer([[GreeterService, endless(log) as never]], async (server) => {
    await withTransport(server, {}, async (t) => {
      assertEquals(await chatAndBreak(t, 2), 2);
      await collectUntil(() => log.ended !== undefined, "the server's implementation ended");
      assertEquals(log.ended, "aborted");
      assertEquals((log.reason as ConnectError).code, Code.Canceled);
      for (let i = 0; i < 100 && (await clientStreams(t)) > 0; i++) await sleep(20);
      assertEquals(await clientStreams(t), 0, "the client still holds the stream");
    });
  });
});

test("a caller that cancels aborts the server implementation's signal (Canceled)", async () => {
  const log: EndlessLog = { yielded: 0 };
  await withServer([[GreeterService, endless(log) as never]], async (server) => {
    await withTransport(server, { fabric: "tcp" }, async (t) => {
      const c = createClient(GreeterService, t);
      const ac = new AbortController();
      try {
        let n = 0;
        for await (const _ of c.greetMany({ times: 0 }, { signal: ac.signal })) {
          if (++n === 3) ac.abort();
        }
      } catch (e) {
        assertEquals((e as ConnectError).code, Code.Canceled);
      }
      await until(() => log.ended !== undefined, "the server's implementation ended");
      assert(log.signal?.aborted, "the server's context signal was not aborted");
      assertEquals((log.reason as ConnectError).code, Code.Canceled);
    });
  });
});

test("a verbus stream whose reader breaks out of its for-await is closed: the server's writer stops; keepOpen keeps it", async () => {
  let serverStream: Stream | undefined;
  let writerEnd: unknown;
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    fabric: { region: SMALL_REGION },
    logger: { warn: () => {}, info: () => {} },
    services: {
      "t.S": {
        Flood: (_req, ctx) => {
          const s = serverStream = acceptStream(ctx, { maxBufSize: 64 * 1024 });
          (async () => {
            const m = new Uint8Array(1024);
            try {
              for (;;) await s.write(m);
            } catch (e) {
              writerEnd = e;
            }
          })();
          return new Uint8Array(0);
        },
      },
    },
  });
  const c = await connect({ host: "127.0.0.1", port: server.port }, { region: SMALL_REGION });
  try {
    for (const keepOpen of [false, true]) {
      writerEnd = undefined;
      const { stream } = await openStream(c, "t.S", "Flood", new Uint8Array(0));
      let n = 0;
      const it = keepOpen ? stream.messages({ keepOpen: true }) : stream;
      for await (const _ of it) if (++n === 5) break;
      if (!keepOpen) {
        assert(stream.closed, "the reader's stream stayed open");
        await until(() => writerEnd !== undefined, "the server's writer was never told");
        assert(writerEnd instanceof StreamError, String(writerEnd));
        assertEquals((writerEnd as StreamError).kind, "closed");
        assert(serverStream!.closed);
        assertEquals(c._fabricStreams()?.table.size ?? (await c.channel._streams()).size, 0);
      } else {
        assert(stream.open, "keepOpen closed the stream");
        await sleep(50);
        assertEquals(writerEnd, undefined);
        assert((await stream.read()) !== undefined, "no more messages after keepOpen");
        stream.reset("done");
        await until(() => writerEnd !== undefined, "the server's writer was never told");
      }
    }
  } finally {
    await c.close();
    await server.close();
  }
});
