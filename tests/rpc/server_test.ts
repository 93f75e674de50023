/**
 * The server: dispatch and its error mapping, the call context, typed methods, option
 * validation, stats, deadlines, graceful close.
 */
import { create, createFileRegistry, type DescMessage } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
import { BinaryReader, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { VerbusError } from "../../errors.ts";
import { type Channel, connect } from "../../rpc/tcp/channel.ts";
import {
  EINTERNAL,
  ELOGOFF,
  ENOMETHOD,
  ENOSERVICE,
  EREQUEST,
  ERESPONSE,
  ERPCTIMEDOUT,
  RpcError,
} from "../../rpc/errors.ts";
import { encodeFrame, FrameParser } from "../../rpc/protocol/frame.ts";
import type { RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import {
  type CallContext,
  type Handler,
  serve,
  type Server,
  typedMethod,
} from "../../rpc/server/server.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { internalErrorIdOf } from "../../rpc/protocol/internal_error.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Collects log lines. */
function memLogger() {
  const lines: string[] = [];
  return { lines, warn: (m: string) => void lines.push(m) };
}

async function withServer(
  services: Record<string, Record<string, Handler>>,
  fn: (server: Server, ch: Channel, log: string[]) => Promise<void>,
): Promise<void> {
  const log = memLogger();
  const server = await serve({ port: 0, services, logger: log });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    await fn(server, ch, log.lines);
  } finally {
    await ch.close();
    await server.close();
  }
}

const echo: Handler = (req, ctx) => {
  ctx.responseAttachment = ctx.requestAttachment;
  return req;
};

test("echo call with attachments both ways", async () => {
  await withServer({ "example.EchoService": { Echo: echo } }, async (_s, ch) => {
    const r = await ch.call("example.EchoService", "Echo", te.encode("ping"), {
      attachment: te.encode("att"),
    });
    assertEquals(td.decode(r.response), "ping");
    assertEquals(td.decode(r.attachment), "att");
    const empty = await ch.call("example.EchoService", "Echo", new Uint8Array(0));
    assertEquals(empty.response.length, 0);
    assertEquals(empty.attachment.length, 0);
  });
});

test("unknown service → ENOSERVICE, unknown method → ENOMETHOD", async () => {
  await withServer({ "example.EchoService": { Echo: echo } }, async (_s, ch) => {
    const e1 = await assertRejects(
      () => ch.call("example.Nope", "Echo", new Uint8Array(1)),
      RpcError,
    );
    assertEquals(e1.errorCode, ENOSERVICE);
    assertEquals(e1.code, "RPC_ERROR");
    assert(e1.errorText.includes("example.Nope"), e1.errorText);
    const e2 = await assertRejects(
      () => ch.call("example.EchoService", "Nope", new Uint8Array(1)),
      RpcError,
    );
    assertEquals(e2.errorCode, ENOMETHOD);
    assert(e2.message.includes("ENOMETHOD (1002)"), e2.message);
    // a service name without its package is found too (as brpc does for jprotobuf clients)
    assertEquals(
      td.decode((await ch.call("EchoService", "Echo", te.encode("short"))).response),
      "short",
    );
  });
});

test("handler throw → EINTERNAL (logged), RpcError → its own code, bad return → ERESPONSE", async () => {
  await withServer({
    "t.S": {
      Boom() {
        throw new TypeError("kaput");
      },
      async AsyncBoom() {
        await sleep(1);
        throw new Error("later kaput");
      },
      Custom() {
        throw new RpcError(4242, "teapot");
      },
      Wrong: (() => "not bytes") as unknown as Handler,
    },
  }, async (server, ch, log) => {
    const e1 = await assertRejects(() => ch.call("t.S", "Boom", new Uint8Array(0)), RpcError);
    assertEquals(e1.errorCode, EINTERNAL);
    // the caller gets a generic text with an id; the thrown text goes to the log only
    const id1 = internalErrorIdOf(e1.errorText);
    assert(id1 !== undefined && !e1.errorText.includes("kaput"), e1.errorText);
    const e2 = await assertRejects(() => ch.call("t.S", "AsyncBoom", new Uint8Array(0)), RpcError);
    assertEquals(e2.errorCode, EINTERNAL);
    const id2 = internalErrorIdOf(e2.errorText);
    assert(id2 !== undefined && !e2.errorText.includes("kaput"), e2.errorText);
    assertEquals(log.filter((l) => l.includes(id2) && l.includes("later kaput")).length, 1);
    const e3 = await assertRejects(() => ch.call("t.S", "Custom", new Uint8Array(0)), RpcError);
    assertEquals([e3.errorCode, e3.errorText], [4242, "teapot"]);
    const e4 = await assertRejects(() => ch.call("t.S", "Wrong", new Uint8Array(0)), RpcError);
    assertEquals(e4.errorCode, ERESPONSE);
    assertEquals(
      log.filter((l) => l.includes("t.S.Boom") && l.includes(id1) && l.includes("kaput")).length,
      1,
    );
    const st = server.stats();
    assertEquals([st.calls, st.errors, st.inflight, st.connections], [4, 4, 0, 1]);
  });
});

test("call context: ids, timeout and deadline, peer, attachment, abort on disconnect", async () => {
  let seen: CallContext | undefined;
  let aborted: Promise<unknown> | undefined;
  await withServer({
    "t.S": {
      Look(_req, ctx) {
        seen = ctx;
        return new Uint8Array([1]);
      },
      Hang(_req, ctx) {
        aborted = new Promise((r) =>
          ctx.signal.addEventListener("abort", () => r(ctx.signal.reason))
        );
        // a well-behaved handler gives up when its caller is gone
        return new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
        );
      },
    },
  }, async (_s, ch) => {
    const before = Date.now();
    await ch.call("t.S", "Look", new Uint8Array(0), {
      logId: 77,
      requestId: "rq-1",
      timeoutMs: 1500,
      attachment: te.encode("A"),
    });
    const c = seen!;
    assertEquals([c.service, c.method, c.logId, c.requestId, c.timeoutMs], [
      "t.S",
      "Look",
      77,
      "rq-1",
      1500,
    ]);
    assert(
      c.deadline! >= before + 1500 && c.deadline! <= Date.now() + 1500,
      `deadline ${c.deadline}`,
    );
    assertEquals(td.decode(c.requestAttachment), "A");
    assertEquals(c.peer.host, "127.0.0.1");
    assert(c.peer.port > 0 && c.peer.port !== ch.port, "peer is the client side");
    const hung = ch.call("t.S", "Hang", new Uint8Array(0), { timeoutMs: 60_000 }).catch((e) => e);
    while (aborted === undefined) await sleep(5);
    await ch.close();
    const reason = await aborted;
    assert(
      reason instanceof VerbusError && reason.code === "CONNECTION_CLOSED",
      `reason ${reason}`,
    );
    assert((await hung) instanceof VerbusError);
  });
});

/** Sends raw frames over a plain TCP connection and returns the answers' metas. */
async function rawCalls(port: number, frames: Uint8Array[], count: number): Promise<RpcMeta[]> {
  const conn = await tcp.connect({ host: "127.0.0.1", port });
  const metas: RpcMeta[] = [];
  try {
    return await new Promise<RpcMeta[]>((resolve, reject) => {
      const parser = new FrameParser((m) => {
        metas.push(m);
        if (metas.length === count) resolve(metas);
      });
      conn.onData((c) => parser.push(c));
      conn.onClose((e) => reject(e ?? new Error("closed")));
      for (const f of frames) conn.write(f);
    });
  } finally {
    conn.close();
  }
}

test("server-side deadline: an answer finished after timeout_ms becomes ERPCTIMEDOUT", async () => {
  await withServer({
    "t.S": {
      async Slow() {
        await sleep(80);
        return new Uint8Array([1]);
      },
    },
  }, async (server) => {
    const req = (timeoutMs: number, id: number) =>
      encodeFrame({
        request: { serviceName: "t.S", methodName: "Slow", timeoutMs },
        correlationId: id,
      }, new Uint8Array(0));
    const metas = await rawCalls(server.port, [req(20, 1), req(2000, 2)], 2);
    const byId = new Map(metas.map((m) => [m.correlationId, m]));
    assertEquals(byId.get(1)!.response!.errorCode, ERPCTIMEDOUT);
    assertEquals(byId.get(2)!.response?.errorCode ?? 0, 0);
  });
});

test("correlation ids beyond 2^53 (brpc bthread ids) are echoed exactly", async () => {
  await withServer({ "t.S": { E: echo } }, async (server) => {
    const ids = [2n ** 62n + 5n, -(2n ** 60n), 2n ** 63n - 1n, 0x1234_0000_0001];
    const metas = await rawCalls(
      server.port,
      ids.map((id) =>
        encodeFrame(
          { request: { serviceName: "t.S", methodName: "E" }, correlationId: id },
          new Uint8Array(1),
        )
      ),
      ids.length,
    );
    assertEquals(metas.map((m) => m.correlationId), ids);
  });
});

test("a frame without request meta is answered with EREQUEST; compression with EREQUEST", async () => {
  await withServer({ "t.S": { E: echo } }, async (server) => {
    const metas = await rawCalls(server.port, [
      encodeFrame({ correlationId: 5 }, new Uint8Array(0)),
      encodeFrame({
        request: { serviceName: "t.S", methodName: "E" },
        correlationId: 6,
        compressType: 2,
      }, new Uint8Array(3)),
    ], 2);
    assertEquals(metas.map((m) => [m.correlationId, m.response!.errorCode]), [[5, EREQUEST], [
      6,
      EREQUEST,
    ]]);
    assert(
      metas[1].response!.errorText!.includes("compress_type=2"),
      metas[1].response!.errorText!,
    );
  });
});

/** example.EchoRequest / EchoResponse descriptors, as protoc would generate them. */
function echoDescriptors(): { req: DescMessage; res: DescMessage } {
  const field = {
    name: "message",
    number: 1,
    type: FieldDescriptorProto_Type.STRING,
    jsonName: "message",
  };
  const file = create(FileDescriptorProtoSchema, {
    name: "echo.proto",
    package: "example",
    messageType: [
      { name: "EchoRequest", field: [{ ...field, label: FieldDescriptorProto_Label.REQUIRED }] },
      { name: "EchoResponse", field: [{ ...field, label: FieldDescriptorProto_Label.REQUIRED }] },
    ],
  });
  const reg = createFileRegistry(file, () => undefined);
  return {
    req: reg.getMessage("example.EchoRequest")!,
    res: reg.getMessage("example.EchoResponse")!,
  };
}

function echoMessage(text: string): Uint8Array {
  return new BinaryWriter().tag(1, WireType.LengthDelimited).string(text).finish();
}

function readMessage(bytes: Uint8Array): string {
  const r = new BinaryReader(bytes);
  assertEquals(r.tag(), [1, WireType.LengthDelimited]);
  return r.string();
}

test("typedMethod with protobuf descriptors and with plain codecs", async () => {
  const { req, res } = echoDescriptors();
  const json = {
    decode: (b: Uint8Array) => JSON.parse(td.decode(b)) as { n: number },
    encode: (v: { twice: number }) => te.encode(JSON.stringify(v)),
  };
  await withServer({
    "example.EchoService": {
      // deno-lint-ignore no-explicit-any
      Echo: typedMethod(req, res, (m: any) => ({ message: `echo: ${m.message}` })),
      Twice: typedMethod(json, json, ({ n }) => Promise.resolve({ twice: n * 2 })),
    },
  }, async (_s, ch) => {
    const r = await ch.call("example.EchoService", "Echo", echoMessage("héllo"));
    assertEquals(readMessage(r.response), "echo: héllo");
    const t = await ch.call("example.EchoService", "Twice", te.encode('{"n":21}'));
    assertEquals(JSON.parse(td.decode(t.response)), { twice: 42 });
    const bad = await assertRejects(
      () => ch.call("example.EchoService", "Echo", new Uint8Array([0x0a, 0x05])),
      RpcError,
    );
    assertEquals(bad.errorCode, EREQUEST);
    assert(bad.errorText.includes("example.EchoRequest"), bad.errorText);
    const bad2 = await assertRejects(
      () => ch.call("example.EchoService", "Twice", te.encode("{")),
      RpcError,
    );
    assertEquals(bad2.errorCode, EREQUEST);
  });
});

test("typedMethod: an answer that cannot be encoded is EINTERNAL with an id; its values stay in the log", async () => {
  const leaky = {
    decode: (b: Uint8Array) => td.decode(b),
    encode: (v: string): Uint8Array => {
      throw new Error(`no room for ${v}`);
    },
  };
  await withServer({
    "t.Typed": { Leak: typedMethod(leaky, leaky, () => "password=hunter2") },
  }, async (_s, ch, log) => {
    const e = await assertRejects(() => ch.call("t.Typed", "Leak", te.encode("x")), RpcError);
    assertEquals(e.errorCode, EINTERNAL);
    const id = internalErrorIdOf(e.errorText);
    assert(id !== undefined && !e.errorText.includes("hunter2"), e.errorText);
    assert(
      log.some((l) =>
        l.includes(id!) && l.includes("cannot encode response: no room for password")
      ),
      log.join("\n"),
    );
  });
});

test("invalid serve() options name the bad field", async () => {
  const cases: [unknown, string][] = [
    [{ port: -1, services: {} }, "port"],
    [{ port: 70000, services: {} }, "port"],
    [
      { port: 0, services: { "example.EchoService": { Echo: 5 } } },
      "services.example.EchoService.Echo",
    ],
    [{ port: 0, services: { "bad name!": {} } }, "services.bad name!"],
    [{ port: 0, services: {}, maxBodySize: 0 }, "maxBodySize"],
    [{ port: 0, services: {}, logger: {} }, "logger"],
    [{ port: 0, services: {}, portt: 1 }, "portt"],
    [{ services: {} }, "port"],
  ];
  for (const [opts, field] of cases) {
    // deno-lint-ignore no-explicit-any
    const e = await assertRejects(() => serve(opts as any), VerbusError, field);
    assertEquals(e.code, "INVALID_OPTIONS", JSON.stringify(opts));
    assert(e.message.startsWith("invalid serve() options: "), e.message);
  }
});

test("graceful close: drains the call in flight, answers ELOGOFF meanwhile, then closes", async () => {
  const log = memLogger();
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const server = await serve({
    port: 0,
    logger: log,
    services: {
      "t.S": {
        async Slow() {
          started();
          await sleep(150);
          return te.encode("finished");
        },
        Fast: () => te.encode("fast"),
      },
    },
  });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  const other = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const slow = ch.call("t.S", "Slow", new Uint8Array(0));
    await running;
    const t0 = Date.now();
    const closing = server.close();
    assertEquals(server.close(), closing, "close() is idempotent");
    const during = await assertRejects(
      () => other.call("t.S", "Fast", new Uint8Array(0)),
      RpcError,
    );
    assertEquals(during.errorCode, ELOGOFF);
    assertEquals(td.decode((await slow).response), "finished");
    await closing;
    assert(Date.now() - t0 >= 100, "close waited for the call");
    assertEquals(server.stats().connections, 0);
    await assertRejects(
      () => connect({ host: "127.0.0.1", port: server.port }, { connectTimeoutMs: 1000 }),
      VerbusError,
    );
  } finally {
    await ch.close();
    await other.close();
    await server.close();
  }
});
