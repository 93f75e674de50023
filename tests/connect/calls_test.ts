/**
 * What the Connect transport and the descriptor services carry besides messages: the timeout
 * (sent as timeout_ms, enforced locally: DeadlineExceeded), abort signals (Canceled), request
 * headers (log-id / x-request-id / user_fields, on the fabric too), interceptors,
 * a streaming method of a run-time descriptor on both planes, registration errors, and the synchronous
 * answer of a synchronous implementation.
 */
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { create, toBinary } from "@bufbuild/protobuf";
import { setTimeout as sleep } from "node:timers/promises";
import { VerbusError } from "../../errors.ts";
import { protoService, type VerbusHandlerContext } from "../../rpc/connect/service.ts";
import { createVerbusTransport, type VerbusTransportOptions } from "../../rpc/connect/transport.ts";
import type { CallContext } from "../../rpc/protocol/dispatch.ts";
import { serve } from "../../rpc/server/server.ts";
import {
  GreeterService,
  GreetRequestSchema,
} from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { EchoService } from "../../examples/greeter/gen/example/echo_pb.ts";
import { echoImpl, greeterImpl } from "../../examples/greeter/service.ts";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { PLANES, streamingService, withServer, withTransport } from "./util.ts";

/** A greeter whose `greet` waits `name` ms (async) and records what its context said. */
function slowGreeter() {
  const seen: { timeoutMs: number | undefined; aborted: boolean }[] = [];
  let calls = 0;
  const impl = {
    async greet(req: { name: string }, ctx: VerbusHandlerContext) {
      calls++;
      const entry = { timeoutMs: ctx.timeoutMs(), aborted: false };
      seen.push(entry);
      const signal = ctx.signal;
      await sleep(Number(req.name));
      entry.aborted = signal.aborted;
      return { greeting: "late" };
    },
  };
  return { impl, seen, calls: () => calls };
}

for (const plane of PLANES) {
  test(`a timeout is sent as timeout_ms and ends the call with DeadlineExceeded (${plane.name})`, async () => {
    const g = slowGreeter();
    await withServer([[GreeterService, g.impl]], async (server) => {
      await withTransport(server, plane.options, async (t) => {
        const greeter = createClient(GreeterService, t);
        assertEquals((await greeter.greet({ name: "0" }, { timeoutMs: 5000 })).greeting, "late");
        const t0 = performance.now();
        const e = await assertRejects(
          () => greeter.greet({ name: "400" }, { timeoutMs: 60 }),
          ConnectError,
        );
        const took = performance.now() - t0;
        assertEquals(Code[e.code], "DeadlineExceeded");
        assert(took < 350, `rejected after ${took.toFixed(0)} ms, not at the 60 ms deadline`);
        assertEquals((await t.client()).fabric, plane.fabric);
        // The server got the deadline: 5000 and 60 ms (less what already passed).
        assert(
          g.seen[0].timeoutMs! > 4000 && g.seen[0].timeoutMs! <= 5000,
          String(g.seen[0].timeoutMs),
        );
        assert(g.seen[1].timeoutMs! > 0 && g.seen[1].timeoutMs! <= 60, String(g.seen[1].timeoutMs));
        // A deadline already passed: refused before anything is sent.
        const before = g.calls();
        const now = await assertRejects(
          () => greeter.greet({ name: "0" }, { timeoutMs: -1 }),
          ConnectError,
        );
        assertEquals(Code[now.code], "DeadlineExceeded");
        await sleep(450); // the slow call finishes; its handler saw its signal aborted
        assertEquals(g.calls(), before);
        assertEquals(g.seen[1].aborted, true);
      });
    });
  });

  test(`an abort signal ends the call with Canceled at once (${plane.name})`, async () => {
    const g = slowGreeter();
    await withServer([[GreeterService, g.impl]], async (server) => {
      await withTransport(server, plane.options, async (t) => {
        const greeter = createClient(GreeterService, t);
        await greeter.greet({ name: "0" }); // connected
        const ac = new AbortController();
        setTimeout(() => ac.abort(), 30);
        const t0 = performance.now();
        const e = await assertRejects(
          () => greeter.greet({ name: "400" }, { signal: ac.signal }),
          ConnectError,
        );
        assertEquals(Code[e.code], "Canceled");
        assert(performance.now() - t0 < 300, "rejected when the signal aborted, not at the answer");
        // Already aborted: never sent.
        const before = g.calls();
        const pre = await assertRejects(
          () => greeter.greet({ name: "0" }, { signal: AbortSignal.abort() }),
          ConnectError,
        );
        assertEquals(Code[pre.code], "Canceled");
        assertEquals(g.calls(), before);
        // The session is still good afterwards (the late answer was dropped).
        await sleep(420);
        assertEquals((await greeter.greet({ name: "0" })).greeting, "late");
        assertEquals((await t.client()).fabric, plane.fabric);
      });
    });
  });
}

test("request headers reach the handler as log_id / request_id / user_fields, all on the fabric", async () => {
  const seen: Record<string, unknown>[] = [];
  const impl = {
    greet(_req: unknown, ctx: VerbusHandlerContext) {
      seen.push({
        header: Object.fromEntries(ctx.requestHeader),
        logId: ctx.call.logId,
        requestId: ctx.call.requestId,
        userFields: ctx.call.userFields ? Object.fromEntries(ctx.call.userFields) : undefined,
      });
      return { greeting: "ok" };
    },
  };
  await withServer([[GreeterService, impl]], async (server) => {
    await withTransport(server, {}, async (t) => {
      const greeter = createClient(GreeterService, t);
      const client = await t.client();
      assertEquals(client.fabric, "shm");
      await greeter.greet({ name: "a" }, { headers: { "log-id": "42" } });
      assertEquals(client.stats().calls.EAGER, 1, "log-id alone stays on the fabric");
      await greeter.greet({ name: "a" }, {
        headers: { "X-Request-Id": "req-7", "log-id": "18446744073709551615", "x-tenant": "t1" },
      });
      assertEquals(client.stats().calls.EAGER, 2, "request_id / user_fields stay on the fabric");
      assertEquals(seen[0], {
        header: { "log-id": "42" },
        logId: 42,
        requestId: undefined,
        userFields: undefined,
      });
      assertEquals(seen[1], {
        header: { "log-id": "18446744073709551615", "x-request-id": "req-7", "x-tenant": "t1" },
        logId: -1, // log_id is an int64 on the wire: u64 2^64-1 is -1 (the header reads it back)
        requestId: "req-7",
        userFields: { "x-tenant": "t1" },
      });
      const bad = await assertRejects(
        () => greeter.greet({ name: "a" }, { headers: { "log-id": "-3" } }),
        ConnectError,
      );
      assertEquals(Code[bad.code], "InvalidArgument");
      assert(bad.rawMessage.includes("log-id"), bad.rawMessage);
      assertEquals(seen.length, 2);
    });
  });
});

test("interceptors run around every call: they add headers and see the response", async () => {
  const order: string[] = [];
  const tag: Interceptor = (next) => async (req) => {
    order.push(`${req.service.typeName}/${req.method.name} ${req.url}`);
    req.header.set("x-greeting", "Hi");
    const res = await next(req);
    order.push(
      `answer ${res.stream ? "stream" : res.message.$typeName} header=${
        res.header instanceof Headers
      }`,
    );
    return { ...res };
  };
  await withServer([[GreeterService, greeterImpl()]], async (server) => {
    await withTransport(server, { interceptors: [tag] }, async (t) => {
      const got: Headers[] = [];
      const r = await createClient(GreeterService, t).greet({ name: "Ada" }, {
        onHeader: (h) => got.push(h),
      });
      assertEquals(r.greeting, "Hi, Ada!");
      assertEquals(got.length === 1 && got[0] instanceof Headers, true);
      assertEquals(order, [
        `greeter.v1.GreeterService/Greet verbus://127.0.0.1:${server.port}/greeter.v1.GreeterService/Greet`,
        "answer greeter.v1.GreetResponse header=true",
      ]);
      // Timeouts still apply through the interceptor chain.
      const e = await assertRejects(
        () => createClient(GreeterService, t).greet({ name: "" }, { timeoutMs: 1000 }),
        ConnectError,
      );
      assertEquals(Code[e.code], "InvalidArgument");
    });
  });
});

test("a streaming method of a descriptor built at run time works on both planes", async () => {
  const svc = streamingService();
  const impl = {
    unary: (r: object) => r,
    async *watch(r: object) {
      yield r;
      yield r;
    },
  };
  await withServer([[svc, impl as never]], async (server) => {
    for (const plane of PLANES) {
      await withTransport(server, plane.options, async (t) => {
        const c = createClient(svc, t) as unknown as {
          unary(r: object): Promise<unknown>;
          watch(r: object): AsyncIterable<unknown>;
        };
        await c.unary({});
        let n = 0;
        for await (const _ of c.watch({})) n++;
        assertEquals(n, 2, plane.name);
      });
    }
  });
});

test("serve() names a method key that is not in the service, a non-function, a duplicate service", async () => {
  const cases: [unknown, string][] = [
    [
      [[GreeterService, { greet: () => ({}), gret: () => ({}) }]],
      'greeter.v1.GreeterService has no method "gret"',
    ],
    [
      [[GreeterService, { greet: 5 }]],
      "greeter.v1.GreeterService.Greet: implementation is not a function",
    ],
    [
      [[GreeterService, {}], [GreeterService, {}]],
      "service greeter.v1.GreeterService is listed twice",
    ],
    [[[{ kind: "nope" }, {}]], "field services.0: expected [service descriptor (GenService)"],
  ];
  for (const [services, text] of cases) {
    // deno-lint-ignore no-explicit-any
    await assertRejects(
      () => serve({ port: 0, fabric: false, services: services as any }),
      VerbusError,
      text,
    );
  }
});

test("a synchronous implementation is answered synchronously; an async one through a promise", async () => {
  const sync = protoService(GreeterService, greeterImpl())["greeter.v1.GreeterService"].Greet;
  const asyncOne = protoService(GreeterService, {
    greet: (r) => Promise.resolve({ greeting: r.name }),
  })["greeter.v1.GreeterService"].Greet;
  const bytes = toBinary(GreetRequestSchema, create(GreetRequestSchema, { name: "s" }));
  const ctx = {} as CallContext; // neither implementation reads it
  assert(sync(bytes, ctx) instanceof Uint8Array, "sync answer is bytes, no promise");
  const p = asyncOne(bytes, ctx);
  assert(p instanceof Promise, "async answer is a promise");
  assert((await p) instanceof Uint8Array);
});

test("createVerbusTransport validates its options at once, naming the field", () => {
  const cases: [unknown, string][] = [
    [{ host: "", port: 1 }, "field host"],
    [{ host: "h", port: 0 }, "field port"],
    [{ host: "h", port: 1, interceptors: [5] }, "field interceptors.0: expected an interceptor"],
    [{ host: "h", port: 1, fabric: "carrier-pigeon" }, "field fabric"],
    [{ host: "h", port: 1, colour: "red" }, "colour"],
  ];
  for (const [options, text] of cases) {
    const e = assertThrows(
      () => createVerbusTransport(options as VerbusTransportOptions),
      VerbusError,
      text,
    );
    assertEquals(e.code, "INVALID_OPTIONS");
  }
});

/** Compile-time checks (`make check` fails if a line marked @ts-expect-error compiles). */
function typedEntries(): Promise<unknown>[] {
  return [
    // The request is typed by the descriptor: r.name is a string.
    serve({
      port: 0,
      services: [[GreeterService, { greet: (r) => ({ greeting: r.name.toUpperCase() }) }]],
    }),
    // @ts-expect-error greeting must be a string
    serve({ port: 0, services: [[GreeterService, { greet: () => ({ greeting: 5 }) }]] }),
    // @ts-expect-error greeter.v1.GreeterService has no method "gret"
    serve({ port: 0, services: [[GreeterService, { gret: () => ({}) }]] }),
  ];
}

test("serve() types each implementation by its own descriptor (checked by make check)", () => {
  assertEquals(typeof typedEntries, "function"); // never called: the checks are the compiler's
});

for (const plane of PLANES) {
  test(`the first calls of a transport, made before it connected, each get their own answer (${plane.name})`, async () => {
    await withServer(
      [[GreeterService, greeterImpl()], [EchoService, echoImpl()]],
      async (server) => {
        await withTransport(server, plane.options, async (t) => {
          const greeter = createClient(GreeterService, t);
          const echo = createClient(EchoService, t);
          // All started in one run, before the transport connected: each waits for the connect.
          const calls = Array.from(
            { length: 20 },
            (_, i) =>
              i % 2 === 0
                ? greeter.greet({ name: `#${i}` }).then((r) => r.greeting)
                : echo.echo({ message: `m${i}` }).then((r) => r.message),
          );
          const got = await Promise.all(calls);
          got.forEach((g, i) =>
            assertEquals(g, i % 2 === 0 ? `Hello, #${i}!` : `m${i}`, `call ${i}`)
          );
        });
      },
    );
  });
}
