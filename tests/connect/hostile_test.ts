/**
 * The descriptor services against hostile or careless input: what a caller learns when the
 * server cannot encode a handler's answer (the failure text may quote the handler's values —
 * a secret put in the wrong field — so the caller gets the generic internal error and its id,
 * the log the detail), and what a raw baidu_std peer gets for request bytes no decoder takes
 * (deep nesting, truncated fields): EREQUEST naming the type, the server serving on.
 */
import { create, createFileRegistry } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
} from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { EINTERNAL, EREQUEST, RpcError } from "../../rpc/errors.ts";
import { internalErrorIdOf } from "../../rpc/protocol/internal_error.ts";
import { GreeterService } from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { PLANES, withServer, withTransport } from "./util.ts";

const SECRET = "password=hunter2";

for (const plane of PLANES) {
  test(`an answer the server cannot encode reaches the caller as Internal with an id, never its values (${plane.name})`, async () => {
    const impl = {
      // deno-lint-ignore no-explicit-any
      greet(req: { name: string }): any {
        // A uint64 given a string, and a getter that throws: both fail in toBinary/create.
        if (req.name === "field") return { greeting: "hi", count: SECRET };
        return {
          get greeting(): string {
            throw new Error(`cannot read ${SECRET}`);
          },
        };
      },
    };
    await withServer([[GreeterService, impl]], async (server, warnings) => {
      await withTransport(server, plane.options, async (t) => {
        const greeter = createClient(GreeterService, t);
        // What the log must have (Deno's BigInt error quotes the string, Bun's does not).
        const detail: Record<string, string> = { field: "GreetResponse.count", getter: SECRET };
        for (const name of ["field", "getter"]) {
          const e = await assertRejects(() => greeter.greet({ name }), ConnectError);
          assertEquals(Code[e.code], "Internal", name);
          assert(!e.rawMessage.includes("hunter2"), `${name}: the caller saw ${e.rawMessage}`);
          const id = internalErrorIdOf(e.rawMessage);
          assert(id !== undefined, `${name}: an id in ${e.rawMessage}`);
          assertEquals(e.metadata.get("brpc-error-code"), String(EINTERNAL), name);
          const logged = warnings.find((w) => w.includes(id!));
          assert(
            logged !== undefined && logged.includes("cannot encode greeter.v1.GreetResponse") &&
              logged.includes(detail[name]),
            `${name}: the log has the detail under ${id}: ${warnings.join("\n")}`,
          );
        }
      });
    });
  });
}

/** A proto3 service whose request nests itself (`message Node { Node child = 1; }`). */
function nestedService() {
  const file = create(FileDescriptorProtoSchema, {
    name: "hostile_nested.proto",
    package: "hostile",
    syntax: "proto3",
    messageType: [{
      name: "Node",
      field: [{
        name: "child",
        number: 1,
        type: FieldDescriptorProto_Type.MESSAGE,
        label: FieldDescriptorProto_Label.OPTIONAL,
        typeName: ".hostile.Node",
        jsonName: "child",
      }, {
        name: "n",
        number: 2,
        type: FieldDescriptorProto_Type.INT32,
        label: FieldDescriptorProto_Label.OPTIONAL,
        jsonName: "n",
      }],
    }],
    service: [{
      name: "Tree",
      method: [{ name: "Depth", inputType: ".hostile.Node", outputType: ".hostile.Node" }],
    }],
  });
  return createFileRegistry(file, () => undefined).getService("hostile.Tree")!;
}

/** `depth` nested `child` fields (tag 0x0a, varint length) around an empty Node, in one buffer. */
function nested(depth: number): Uint8Array {
  const varintLen = (n: number): number => n < 0x80 ? 1 : 1 + varintLen(n >>> 7);
  const sizes = [0]; // sizes[i]: bytes of the i innermost levels
  for (let i = 1; i <= depth; i++) sizes[i] = 1 + varintLen(sizes[i - 1]) + sizes[i - 1];
  const b = new Uint8Array(sizes[depth]);
  let o = 0;
  for (let i = depth; i >= 1; i--) {
    b[o++] = 0x0a;
    let n = sizes[i - 1];
    for (; n >= 0x80; n >>>= 7) b[o++] = (n & 0x7f) | 0x80;
    b[o++] = n;
  }
  return b;
}

test("request bytes no decoder takes (nested past the stack, truncated) are EREQUEST naming the type; the server serves on", async () => {
  const tree = nestedService();
  let calls = 0;
  const impl = {
    // deno-lint-ignore no-explicit-any
    depth(req: any) {
      calls++;
      let d = 0;
      for (let n = req; n.child !== undefined; n = n.child) d++;
      return { n: d };
    },
  };
  await withServer([[tree, impl]], async (server) => {
    const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
    try {
      const ok = await ch.call("hostile.Tree", "Depth", nested(3));
      assertEquals(Array.from(ok.response), [0x10, 3], "a small tree is answered");
      const cases: [string, Uint8Array][] = [
        ["nested 200,000 deep", nested(200_000)],
        ["a length past the end", Uint8Array.of(0x0a, 0x7f, 0x00)],
        ["an unknown wire type", Uint8Array.of(0x0f)],
      ];
      for (const [what, bytes] of cases) {
        const e = await assertRejects(() => ch.call("hostile.Tree", "Depth", bytes), RpcError);
        assertEquals(e.errorCode, EREQUEST, `${what}: ${e.errorText}`);
        assert(e.errorText.startsWith("cannot decode hostile.Node"), `${what}: ${e.errorText}`);
        assert(e.errorText.length < 300, `${what}: bounded text (${e.errorText.length})`);
      }
      assertEquals(calls, 1, "the implementation never saw the bad requests");
      const again = await ch.call("hostile.Tree", "Depth", nested(1));
      assertEquals(Array.from(again.response), [0x10, 1], "still served");
    } finally {
      await ch.close();
    }
  }, false);
});
