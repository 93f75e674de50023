/**
 * The whole Connect metadata contract over verbus, on shm, the simulated URMA and TCP: a
 * generated client with a tracing interceptor keeps the fabric path (EAGER) while the handler
 * sees the header; response headers and trailers set by the handler reach `onHeader` /
 * `onTrailer`; a ConnectError's details (findDetails) and metadata come back; server
 * interceptors (`serve({ interceptors })`) read request headers, set response headers and
 * trailers, run in Connect's order, and may refuse a call; interceptors beside byte-level
 * services are refused at serve().
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { VerbusError } from "../../errors.ts";
import { serve } from "../../rpc/server/server.ts";
import type { FabricHostOptions } from "../../rpc/session/server/fabric_host.ts";
import type { ServerCall } from "../../rpc/protocol/dispatch.ts";
import { ServerSession } from "../../rpc/session/server/server_session.ts";
import type { VerbusHandlerContext } from "../../rpc/connect/service.ts";
import type { VerbusTransportOptions } from "../../rpc/connect/transport.ts";
import {
  GreeterService,
  GreetRequestSchema,
} from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { callOptionsOf } from "../../rpc/connect/headers.ts";
import { SIM_ABI, simPathFor } from "../urma/sim_path.ts";
import { withServer, withTransport } from "./util.ts";

const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const SIM = simPathFor(SIM_ABI);

/** Each plane: transport options, the server's fabric options, and what `client.fabric` says. */
const PLANES = [
  { name: "shm", options: {}, server: {}, fabric: "shm" },
  {
    name: "URMA (simulated)",
    options: { fabric: "urma", providerOptions: { urma: { library: SIM } } },
    server: { fabrics: ["urma"], providerOptions: { urma: { library: SIM } } },
    fabric: "urma (simulated)",
  },
  { name: "TCP", options: { fabric: "tcp" }, server: {}, fabric: "tcp" },
] as const;

const tracing: Interceptor = (next) => (req) => {
  req.header.set("traceparent", TRACEPARENT);
  return next(req);
};

/** How each call reached the handler: "fabric" (a fabric session's call) or "tcp". */
const carriers: string[] = [];

/** A greeter that echoes its request headers as response headers and counts in a trailer. */
function echoingGreeter() {
  let calls = 0;
  return {
    greet(req: { name: string }, ctx: VerbusHandlerContext) {
      calls++;
      carriers.push((ctx.call as ServerCall).sink instanceof ServerSession ? "fabric" : "tcp");
      for (const [k, v] of ctx.requestHeader) ctx.responseHeader.set(`echo-${k}`, v);
      ctx.responseTrailer.set("x-calls", String(calls));
      if (req.name === "fail") {
        ctx.responseHeader.set("x-before-error", "yes");
        throw new ConnectError("no such name", Code.NotFound, { "x-error-meta": "m" }, [
          { desc: GreetRequestSchema, value: { name: "a detail" } },
        ]);
      }
      return { greeting: `Hello, ${req.name}!` };
    },
  };
}

for (const plane of PLANES) {
  test(`a tracing interceptor keeps the fabric path; headers and trailers both ways (${plane.name})`, async () => {
    await withServer(
      [[GreeterService, echoingGreeter()]],
      async (server) => {
        await withTransport(
          server,
          { ...plane.options, interceptors: [tracing] } as Partial<VerbusTransportOptions>,
          async (t) => {
            const greeter = createClient(GreeterService, t);
            let header: Headers | undefined, trailer: Headers | undefined;
            for (let i = 0; i < 100; i++) {
              await greeter.greet({ name: "Ada" }, {
                headers: { "x-tenant": "t1" },
                onHeader: (h) => (header = h),
                onTrailer: (h) => (trailer = h),
              });
            }
            const client = await t.client();
            assertEquals(client.fabric, plane.fabric);
            const calls = client.stats().calls;
            if (plane.fabric === "tcp") assertEquals(calls.TCP_FALLBACK, 100);
            else assertEquals([calls.EAGER, calls.TCP_FALLBACK], [100, 0]);
            assertEquals(header?.get("echo-traceparent"), TRACEPARENT);
            assertEquals(header?.get("echo-x-tenant"), "t1");
            assertEquals(trailer?.get("x-calls"), "100");
          },
        );
      },
      undefined,
      plane.server as Partial<FabricHostOptions>,
    );
  });

  test(`a ConnectError's details and metadata reach the client (${plane.name})`, async () => {
    await withServer(
      [[GreeterService, echoingGreeter()]],
      async (server) => {
        await withTransport(server, plane.options as Partial<VerbusTransportOptions>, async (t) => {
          const greeter = createClient(GreeterService, t);
          await t.client();
          carriers.length = 0;
          const e = await assertRejects(
            () => greeter.greet({ name: "fail" }, { headers: { traceparent: TRACEPARENT } }),
            ConnectError,
          );
          assertEquals([Code[e.code], e.rawMessage], ["NotFound", "no such name"]);
          assertEquals(e.findDetails(GreetRequestSchema).map((d) => d.name), ["a detail"]);
          assertEquals(e.metadata.get("x-error-meta"), "m");
          assertEquals(e.metadata.get("x-before-error"), "yes");
          assertEquals(e.metadata.get("echo-traceparent"), TRACEPARENT);
          assertEquals(e.metadata.get("x-calls"), "1", "trailers join the metadata");
          assertEquals(carriers.splice(0), [plane.fabric === "tcp" ? "tcp" : "fabric"]);
        });
      },
      undefined,
      plane.server as Partial<FabricHostOptions>,
    );
  });
}

test("server interceptors read request headers, set response headers and trailers, in Connect's order", async () => {
  const order: string[] = [];
  const outer: Interceptor = (next) => async (req) => {
    order.push(`outer in ${req.header.get("traceparent") ? "traced" : "untraced"}`);
    const res = await next(req);
    order.push("outer out");
    if (!res.stream) res.header.set("x-outer", "1");
    return res;
  };
  const auth: Interceptor = (next) => async (req) => {
    order.push("auth");
    if (req.header.get("authorization") !== "Bearer ok") {
      throw new ConnectError("who are you?", Code.Unauthenticated, {
        "www-authenticate": "Bearer",
      });
    }
    req.header.set("x-user", "ada"); // the handler sees what the interceptor passes on
    const res = await next(req);
    res.trailer.set("x-audited", "yes");
    return res;
  };
  const seen: (string | null)[] = [];
  const impl = {
    greet(req: { name: string }, ctx: VerbusHandlerContext) {
      seen.push(ctx.requestHeader.get("x-user"));
      ctx.responseHeader.set("x-handler", "1");
      return { greeting: `Hi ${req.name}` };
    },
  };
  const server = await serve({
    port: 0,
    services: [[GreeterService, impl]],
    interceptors: [outer, auth],
    logger: { warn: () => {} },
  });
  try {
    for (const plane of [PLANES[0], PLANES[2]]) {
      order.length = 0;
      await withTransport(server, plane.options as Partial<VerbusTransportOptions>, async (t) => {
        const greeter = createClient(GreeterService, t);
        let header: Headers | undefined, trailer: Headers | undefined;
        const r = await greeter.greet(create(GreetRequestSchema, { name: "Ada" }), {
          headers: { authorization: "Bearer ok", traceparent: TRACEPARENT },
          onHeader: (h) => (header = h),
          onTrailer: (h) => (trailer = h),
        });
        assertEquals(r.greeting, "Hi Ada");
        assertEquals(order, ["outer in traced", "auth", "outer out"]);
        assertEquals([header?.get("x-outer"), header?.get("x-handler")], ["1", "1"]);
        assertEquals(trailer?.get("x-audited"), "yes");
        const e = await assertRejects(() => greeter.greet({ name: "Eve" }), ConnectError);
        assertEquals([Code[e.code], e.rawMessage], ["Unauthenticated", "who are you?"]);
        assertEquals(e.metadata.get("www-authenticate"), "Bearer");
        assertEquals(seen, ["ada"], "the refused call never ran");
        seen.length = 0;
        assertEquals((await t.client()).fabric, plane.fabric);
      });
    }
  } finally {
    await server.close();
  }
});

test("serve() refuses interceptors beside byte-level services, and a non-function interceptor", async () => {
  const e = await assertRejects(
    () =>
      serve({
        port: 0,
        services: { "example.EchoService": { Echo: (r) => r } },
        interceptors: [tracing],
      }),
    VerbusError,
  );
  assertEquals(e.code, "INVALID_OPTIONS");
  assert(e.message.includes("byte-level services"), e.message);
  const bad = await assertRejects(
    () =>
      serve({
        port: 0,
        services: [[GreeterService, echoingGreeter()]],
        interceptors: [42 as unknown as Interceptor],
      }),
    VerbusError,
  );
  assert(bad.message.includes("interceptors"), bad.message);
});

test("call headers given as a plain object map as a Headers would make them", () => {
  const fields = (h: HeadersInit) => Object.fromEntries(callOptionsOf(h, undefined).userFields!);
  assertEquals(fields({ "X-Tenant": "t1", traceparent: TRACEPARENT }), {
    "x-tenant": "t1",
    traceparent: TRACEPARENT,
  });
  assertEquals(fields({ "x-pad": " v\t" }), { "x-pad": "v" }, "trimmed as Headers does");
  assertEquals(fields({ "X-A": "1", "x-a": "2" }), { "x-a": "1, 2" }, "joined as Headers does");
  assertEquals(fields([["x-b", "1"], ["x-b", "2"]]), { "x-b": "1, 2" });
  assertEquals(callOptionsOf({ "X-Request-Id": "r1", "log-id": "5" }, 10), {
    timeoutMs: 10,
    requestId: "r1",
    logId: 5,
  });
  for (const bad of [{ "bad name": "v" }, { "x-v": "a\nb" }, { "x-v": "✓" }] as HeadersInit[]) {
    assertThrows(() => callOptionsOf(bad, undefined), TypeError);
  }
});
