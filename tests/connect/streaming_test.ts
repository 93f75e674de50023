/**
 * Connect streaming over verbus streams, with the greeter's generated client and server
 * (`greetMany` server-streaming, `greetAll` client-streaming, `chat` bidi), from a client with a
 * shm session and from a TCP-only one: messages in order, request headers, the error status,
 * cancellation and deadlines ending the stream on both sides, a slow reader holding the
 * implementation back, client and server interceptors seeing streaming calls, and targets
 * without streams refused.
 */
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { GreeterService } from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { greeterImpl } from "../../examples/greeter/service.ts";
import { createVerbusTransport } from "../../rpc/connect/transport.ts";
import { serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { endless, PLANES, withServer, withTransport } from "./util.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An async iterable fed by `push`, ended by `end` (a bidi client's requests). */
function feed<T>() {
  const items: T[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  return {
    push(x: T) {
      items.push(x);
      wake?.();
    },
    end() {
      ended = true;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (items.length > 0) yield items.shift()!;
        else if (ended) return;
        else await new Promise<void>((r) => (wake = r));
      }
    },
  };
}

test("server-, client-streaming and bidi greeter methods, over shm-session and TCP clients", async () => {
  await withServer([[GreeterService, greeterImpl()]], async (server) => {
    for (const plane of PLANES) {
      await withTransport(server, plane.options, async (t) => {
        const c = createClient(GreeterService, t);
        const got: string[] = [];
        for await (
          const r of c.greetMany({ name: "Ada", times: 50 }, { headers: { "x-greeting": "Hi" } })
        ) {
          got.push(r.greeting);
        }
        assertEquals(got.length, 50, plane.name);
        assertEquals(got[0], "Hi #1, Ada!");
        assertEquals(got[49], "Hi #50, Ada!");

        async function* names() {
          yield { name: "Ada" };
          yield { name: "Grace" };
        }
        const all = await c.greetAll(names());
        assertEquals(all.greeting, "Hello, Ada and Grace!");

        const input = feed<{ name: string }>();
        const it = c.chat(input)[Symbol.asyncIterator]();
        for (const n of ["x", "y", "z"]) {
          input.push({ name: n });
          assertEquals((await it.next()).value?.greeting, `Hello, ${n}!`); // one answer per request
        }
        input.end();
        assert((await it.next()).done);
        // unary calls go on beside them
        assertEquals((await c.greet({ name: "Bo" })).greeting, "Hello, Bo!");
      });
    }
  });
});

test("an error the implementation throws ends the stream with its code and message", async () => {
  await withServer([[GreeterService, greeterImpl()]], async (server) => {
    await withTransport(server, { fabric: "tcp" }, async (t) => {
      const c = createClient(GreeterService, t);
      const e = await assertRejects(async () => {
        for await (const _ of c.greetMany({ name: "x", times: 20_000 })) { /* none */ }
      }, ConnectError);
      assertEquals(e.code, Code.InvalidArgument);
      assert(e.rawMessage.includes("times must be at most 10000"), e.rawMessage);
    });
  });
});

test("cancelling a stream ends it on the server (its generator returns)", async () => {
  const log = { yielded: 0 } as { yielded: number; ended?: string };
  await withServer([[GreeterService, endless(log) as never]], async (server) => {
    await withTransport(server, {}, async (t) => {
      const c = createClient(GreeterService, t);
      const ac = new AbortController();
      const e = await assertRejects(async () => {
        let n = 0;
        for await (const _ of c.greetMany({ times: 0 }, { signal: ac.signal })) {
          if (++n === 5) ac.abort();
        }
      }, ConnectError);
      assertEquals(e.code, Code.Canceled);
      for (let i = 0; i < 100 && log.ended === undefined; i++) await sleep(20);
      assert(log.ended !== undefined, "the server's implementation never ended");
      const at = log.yielded;
      await sleep(100);
      assertEquals(log.yielded, at, "it yields no more");
    });
  });
});

test("a deadline ends the stream on both sides: DeadlineExceeded, the server's signal aborted", async () => {
  const log = { yielded: 0 } as { yielded: number; ended?: string; signal?: AbortSignal };
  await withServer([[GreeterService, endless(log) as never]], async (server) => {
    await withTransport(server, { fabric: "tcp" }, async (t) => {
      const c = createClient(GreeterService, t);
      const e = await assertRejects(async () => {
        for await (
          const _ of c.greetMany({ times: 0 }, { timeoutMs: 300 })
        ) { /* until the deadline */ }
      }, ConnectError);
      assertEquals(e.code, Code.DeadlineExceeded);
      for (let i = 0; i < 100 && !log.signal?.aborted; i++) await sleep(20);
      assert(log.signal?.aborted, "the server's context signal was not aborted at the deadline");
      // its generator ended (by the client's reset or by the deadline, whichever came first)
      for (let i = 0; i < 100 && log.ended === undefined; i++) await sleep(20);
      assert(log.ended !== undefined, "the server's implementation never ended");
    });
  });
});

test("a client that stops reading holds the implementation back (bounded by the window)", async () => {
  const log = { yielded: 0 } as { yielded: number; ended?: string };
  await withServer([[GreeterService, endless(log, 64 * 1024) as never]], async (server) => {
    await withTransport(server, {}, async (t) => {
      const c = createClient(GreeterService, t);
      const ac = new AbortController();
      const it = c.greetMany({ times: 0 }, { signal: ac.signal })[Symbol.asyncIterator]();
      await it.next();
      // Reads nothing more. 64 KiB messages under brpc's default 2 MiB window: the pump fills
      // the window and waits on its writes (on a loaded host filling it takes a while: wait
      // until 300 ms pass without a new message, up to 6 s).
      let held = -1;
      for (let i = 0; i < 20 && held !== log.yielded; i++) (held = log.yielded, await sleep(300));
      assertEquals(log.yielded, held, "the implementation kept yielding while nobody read");
      assert(held <= 40, `${held} messages of 64 KiB yielded: more than the window holds`);
      ac.abort();
      await it.next().catch(() => {});
    });
  });
});

test("interceptors see streaming calls; agent and cluster targets refuse streams by name", async () => {
  const seen: string[] = [];
  const tracer: Interceptor = (next) => (req) => {
    seen.push(
      `${req.stream ? "stream" : "unary"} ${req.method.name} ${req.header.get("traceparent")}`,
    );
    return next(req);
  };
  await withServer([[GreeterService, greeterImpl()]], async (server) => {
    const t = createVerbusTransport({
      host: "127.0.0.1",
      port: server.port,
      interceptors: [tracer],
    });
    try {
      const c = createClient(GreeterService, t);
      const r = [];
      for await (
        const m of c.greetMany({ name: "T", times: 2 }, { headers: { traceparent: "00-ab" } })
      ) r.push(m);
      assertEquals(r.length, 2);
      assertEquals(seen, ["stream GreetMany 00-ab"]);
    } finally {
      await t.close();
    }
    const list = createVerbusTransport({ target: `list://127.0.0.1:${server.port}` });
    try {
      const c = createClient(GreeterService, list);
      const e = await assertRejects(async () => {
        for await (const _ of c.greetMany({ name: "x", times: 1 })) { /* none */ }
      }, ConnectError);
      assertEquals(e.code, Code.Unimplemented);
      assert(e.rawMessage.includes("streams need a direct connection"), e.rawMessage);
    } finally {
      await list.close();
    }
  });
});

test("server interceptors wrap streaming methods: they read request headers, set response headers", async () => {
  const seen: string[] = [];
  const stamp: Interceptor = (next) => async (req) => {
    seen.push(`${req.stream ? "stream" : "unary"} ${req.method.name} ${req.header.get("x-who")}`);
    const res = await next(req);
    res.header.set("x-stamped", "yes");
    return res;
  };
  const server = await serve({
    port: 0,
    fabric: false,
    services: [[GreeterService, greeterImpl()]],
    interceptors: [stamp],
  });
  const t = createVerbusTransport({ host: "127.0.0.1", port: server.port, fabric: "tcp" });
  try {
    const c = createClient(GreeterService, t);
    let header: Headers | undefined, trailer: Headers | undefined;
    const got = [];
    const opts = {
      headers: { "x-who": "me" },
      onHeader: (h: Headers) => (header = h),
      onTrailer: (h: Headers) => (trailer = h),
    };
    for await (const m of c.greetMany({ name: "I", times: 3 }, opts)) got.push(m.greeting);
    assertEquals(got.length, 3);
    assertEquals(seen, ["stream GreetMany me"]);
    assertEquals(header?.get("x-stamped"), "yes");
    assert(trailer !== undefined);
  } finally {
    await t.close();
    await server.close();
  }
});

test("bidi and client-streaming calls end on both sides by deadline and by cancel", async () => {
  const ended: string[] = [];
  const impl = {
    greet: () => ({ greeting: "" }),
    async *chat(requests: AsyncIterable<{ name: string }>) {
      try {
        for await (const r of requests) yield { greeting: `Hello, ${r.name}!` };
      } finally {
        ended.push("chat");
      }
    },
    async greetAll(requests: AsyncIterable<{ name: string }>) {
      try {
        for await (const _ of requests) { /* never ends: the client sends no END */ }
        return { greeting: "" };
      } finally {
        ended.push("greetAll");
      }
    },
  };
  await withServer([[GreeterService, impl as never]], async (server) => {
    await withTransport(server, { fabric: "tcp" }, async (t) => {
      const c = createClient(GreeterService, t);
      const input = feed<{ name: string }>(); // never ended
      input.push({ name: "a" });
      const e = await assertRejects(async () => {
        for await (const _ of c.chat(input, { timeoutMs: 300 })) { /* one answer, then waits */ }
      }, ConnectError);
      assertEquals(e.code, Code.DeadlineExceeded);
      const ac = new AbortController();
      const slow = feed<{ name: string }>();
      slow.push({ name: "b" });
      setTimeout(() => ac.abort(), 100);
      const e2 = await assertRejects(() => c.greetAll(slow, { signal: ac.signal }), ConnectError);
      assertEquals(e2.code, Code.Canceled);
      for (let i = 0; i < 100 && ended.length < 2; i++) await sleep(20);
      assertEquals(ended.sort(), ["chat", "greetAll"]);
    });
  });
});
