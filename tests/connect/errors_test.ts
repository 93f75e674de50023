/**
 * The error mapping of the Connect layer, both ways (rpc/connect/codes.ts): a ConnectError a
 * handler throws reaches a generated client with its code (over shm and over TCP); the
 * baidu_std codes of a byte-level (brpc-style) server map as the table says; verbus failures
 * (no server, closed transport) are Unavailable; encode / decode failures name the message.
 */
import { create, createFileRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { BRPC_ERROR_CODE_HEADER } from "../../rpc/connect/codes.ts";
import { createVerbusTransport } from "../../rpc/connect/transport.ts";
import {
  EINTERNAL,
  ELIMIT,
  ELOGOFF,
  ENOMETHOD,
  EREQUEST,
  ERESPONSE,
  ERPCAUTH,
  ERPCTIMEDOUT,
  RpcError,
} from "../../rpc/errors.ts";
import { EchoResponseSchema, EchoService } from "../../examples/greeter/gen/example/echo_pb.ts";
import { requiredCheck } from "../../rpc/connect/required.ts";
import { internalErrorIdOf } from "../../rpc/protocol/internal_error.ts";
import {
  GreeterService,
  GreetRequestSchema,
  GreetResponseSchema,
} from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { serve } from "../../rpc/server/server.ts";
import { greeterImpl } from "../../examples/greeter/service.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { PLANES, withServer, withTransport } from "./util.ts";

const { INT32, MESSAGE } = FieldDescriptorProto_Type;
const { REQUIRED, OPTIONAL } = FieldDescriptorProto_Label;
const ALL_CODES = Object.values(Code).filter((c): c is Code => typeof c === "number");

for (const plane of PLANES) {
  test(`every ConnectError code a handler throws reaches the client as that code (${plane.name})`, async () => {
    const impl = {
      greet(req: { name: string }) {
        throw new ConnectError(`refused ${req.name}`, Number(req.name) as Code);
      },
    };
    await withServer([[GreeterService, impl]], async (_server, warnings) => {
      await withTransport(_server, plane.options, async (t) => {
        const greeter = createClient(GreeterService, t);
        for (const code of ALL_CODES) {
          const e = await assertRejects(() => greeter.greet({ name: String(code) }), ConnectError);
          assertEquals([Code[e.code], e.rawMessage], [Code[code], `refused ${code}`]);
        }
        assertEquals((await t.client()).fabric, plane.fabric);
      });
      assertEquals(warnings.filter((w) => !w.includes("handshake")), []);
    });
  });
}

test("baidu_std error codes of a byte-level (brpc-style) server map to Connect codes", async () => {
  // The handler answers with the error_code named in the request (its GreetRequest.name).
  const byteLevel = {
    "greeter.v1.GreeterService": {
      Greet: (bytes: Uint8Array) => {
        const code = Number(fromBinary(GreetRequestSchema, bytes).name);
        throw new RpcError(code, `code ${code}`);
      },
    },
  };
  const table: [number, Code][] = [
    [ENOMETHOD, Code.Unimplemented],
    [EREQUEST, Code.InvalidArgument],
    [ERPCAUTH, Code.Unauthenticated],
    [ERPCTIMEDOUT, Code.DeadlineExceeded],
    [110, Code.DeadlineExceeded],
    [ELIMIT, Code.Unavailable],
    [ELOGOFF, Code.Unavailable],
    [3001, Code.Unavailable],
    [EINTERNAL, Code.Internal],
    [ERESPONSE, Code.Internal],
    [1, Code.PermissionDenied],
    [2, Code.NotFound],
    [125, Code.Canceled],
    [7777, Code.Unknown],
  ];
  await withServer(byteLevel, async (server) => {
    await withTransport(server, { fabric: "tcp" }, async (t) => {
      const greeter = createClient(GreeterService, t);
      for (const [brpc, code] of table) {
        const e = await assertRejects(() => greeter.greet({ name: String(brpc) }), ConnectError);
        assertEquals([brpc, Code[e.code]], [brpc, Code[code]]);
        assertEquals(e.rawMessage, `code ${brpc}`);
        assertEquals(e.metadata.get(BRPC_ERROR_CODE_HEADER), String(brpc));
        assert(e.cause instanceof RpcError, "the RpcError is the cause");
      }
      // No such service / method: the dispatcher's ENOSERVICE / ENOMETHOD.
      const echo = await assertRejects(
        () => createClient(EchoService, t).echo({ message: "x" }),
        ConnectError,
      );
      assertEquals(Code[echo.code], "Unimplemented");
      assert(echo.rawMessage.includes("no service example.EchoService"), echo.rawMessage);
    });
  }, false);
});

test("a handler's plain Error is Internal (and logged); its EINTERNAL '[Code]' prefix is read back", async () => {
  const impl = {
    greet(req: { name: string }): never {
      if (req.name === "plain") throw new TypeError("oops");
      throw new RpcError(EINTERNAL, "[FailedPrecondition] not yet");
    },
  };
  let plainId = "";
  await withServer([[GreeterService, impl]], async (server, warnings) => {
    await withTransport(server, {}, async (t) => {
      const greeter = createClient(GreeterService, t);
      const plain = await assertRejects(() => greeter.greet({ name: "plain" }), ConnectError);
      // a generic text with an id reaches the caller; "oops" only the log, with that id
      assertEquals(Code[plain.code], "Internal");
      plainId = internalErrorIdOf(plain.rawMessage) ?? "";
      assert(plainId !== "" && !plain.rawMessage.includes("oops"), plain.rawMessage);
      const tagged = await assertRejects(() => greeter.greet({ name: "x" }), ConnectError);
      assertEquals([Code[tagged.code], tagged.rawMessage], ["FailedPrecondition", "not yet"]);
    });
    assert(
      warnings.some((w) =>
        w.includes("greeter.v1.GreeterService.Greet") && w.includes(plainId) && w.includes("oops")
      ),
      String(warnings),
    );
  });
});

test("no server is Unavailable, and the next call connects; a closed transport is Unavailable", async () => {
  let port = 0;
  await withServer({}, (s) => Promise.resolve(void (port = s.port)), false);
  const t = createVerbusTransport({
    host: "127.0.0.1",
    port,
    connectTimeoutMs: 2000,
    logger: { warn: () => {} },
  });
  const greeter = createClient(GreeterService, t);
  const e = await assertRejects(() => greeter.greet({ name: "a" }), ConnectError);
  assertEquals(Code[e.code], "Unavailable");
  assert((e.cause as { code?: string }).code === "CONNECT_FAILED", String(e.cause));
  const server = await serve({ port, services: [[GreeterService, greeterImpl()]], fabric: false });
  try {
    assertEquals((await greeter.greet({ name: "again" })).greeting, "Hello, again!");
  } finally {
    await server.close();
  }
  await t.close();
  const closed = await assertRejects(() => greeter.greet({ name: "a" }), ConnectError);
  assertEquals(Code[closed.code], "Unavailable");
  assert(closed.rawMessage.includes("closed"), closed.rawMessage);
});

test("encode and decode failures name the message: client Internal, server EREQUEST / logged EINTERNAL", async () => {
  const impl = {
    // proto2 `required string message` left unset: cannot be encoded.
    echo: () => ({}),
  };
  await withServer([[EchoService, impl]], async (server, warnings) => {
    await withTransport(server, {}, async (t) => {
      const echo = createClient(EchoService, t);
      const req = await assertRejects(() => echo.echo({} as { message: string }), ConnectError);
      assertEquals(Code[req.code], "Internal");
      assert(req.rawMessage.includes("cannot encode example.EchoRequest"), req.rawMessage);
      // The server's own encode failure: a generic text and an id (tests/connect/hostile_test.ts).
      const res = await assertRejects(() => echo.echo({ message: "m" }), ConnectError);
      assertEquals(Code[res.code], "Internal");
      const id = internalErrorIdOf(res.rawMessage);
      assert(id !== undefined, res.rawMessage);
      assert(
        warnings.some((w) => w.includes(id!) && w.includes("cannot encode example.EchoResponse")),
        warnings.join("\n"),
      );
    });
    const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
    try {
      const bad = await assertRejects(
        () => ch.call("example.EchoService", "Echo", new Uint8Array([0x0a, 0x05])),
        RpcError,
      );
      assertEquals(bad.errorCode, EREQUEST);
      assert(bad.errorText.includes("cannot decode example.EchoRequest"), bad.errorText);
      // proto2: an EchoRequest without its required message is refused, as brpc does.
      const missing = await assertRejects(
        () => ch.call("example.EchoService", "Echo", new Uint8Array(0)),
        RpcError,
      );
      assertEquals(missing.errorCode, EREQUEST);
      assert(
        missing.errorText.includes("required field example.EchoRequest.message is missing"),
        missing.errorText,
      );
    } finally {
      await ch.close();
    }
  });
});

test("a response the client cannot decode is Internal naming the message", async () => {
  const byteLevel = {
    "greeter.v1.GreeterService": { Greet: () => new Uint8Array([0x0a, 0x09, 0x01]) },
  };
  await withServer(byteLevel, async (server) => {
    await withTransport(server, {}, async (t) => {
      const e = await assertRejects(
        () => createClient(GreeterService, t).greet({ name: "a" }),
        ConnectError,
      );
      assertEquals(Code[e.code], "Internal");
      assert(e.rawMessage.includes("cannot decode greeter.v1.GreetResponse"), e.rawMessage);
    });
  });
  // The same bytes a valid server would send decode fine (the check above is not vacuous).
  const ok = toBinary(GreetResponseSchema, create(GreetResponseSchema, { greeting: "hi" }));
  assertEquals(fromBinary(GreetResponseSchema, ok).greeting, "hi");
});

test("an answer without a proto2 required field is Internal; proto3 types have nothing to check", async () => {
  const byteLevel = { "example.EchoService": { Echo: () => new Uint8Array(0) } };
  await withServer(byteLevel, async (server) => {
    await withTransport(server, {}, async (t) => {
      const e = await assertRejects(
        () => createClient(EchoService, t).echo({ message: "m" }),
        ConnectError,
      );
      assertEquals(Code[e.code], "Internal");
      assert(
        e.rawMessage.includes("required field example.EchoResponse.message is missing"),
        e.rawMessage,
      );
    });
  });
  assertEquals(requiredCheck(GreetRequestSchema), null);
  const check = requiredCheck(EchoResponseSchema)!;
  assertEquals(check(create(EchoResponseSchema, { message: "" })), undefined);
  assertEquals(
    check(fromBinary(EchoResponseSchema, new Uint8Array(0))),
    "example.EchoResponse.message",
  );
});

test("required fields are checked inside set nested messages too", () => {
  const file = create(FileDescriptorProtoSchema, {
    name: "nested.proto",
    package: "t",
    messageType: [
      {
        name: "Inner",
        field: [{ name: "x", number: 1, type: INT32, label: REQUIRED, jsonName: "x" }],
      },
      {
        name: "Outer",
        field: [{
          name: "inner",
          number: 1,
          type: MESSAGE,
          label: OPTIONAL,
          typeName: ".t.Inner",
          jsonName: "inner",
        }],
      },
    ],
  });
  const outer = createFileRegistry(file, () => undefined).getMessage("t.Outer")!;
  const check = requiredCheck(outer)!;
  assert(check !== null, "Outer has a required field below it");
  // deno-lint-ignore no-explicit-any
  const m = (init: any) => create(outer, init);
  assertEquals(check(m({})), undefined); // inner unset: nothing below it to check
  assertEquals(check(m({ inner: {} })), "t.Inner.x");
  assertEquals(check(m({ inner: { x: 0 } })), undefined);
});
