/**
 * No internal text to callers: a handler's unexpected exception reaches the caller as EINTERNAL
 * `internal error (id <16 hex>)` on every path (TCP baidu_std, the fabric's EAGER / LAZY / BULK,
 * TCP_FALLBACK, the Connect transport), while the server's log line holds the same id, the
 * secret text and the stack. Errors thrown on purpose (`RpcError`, `ConnectError`) keep theirs.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { EINTERNAL, RpcError } from "../../rpc/errors.ts";
import { internalErrorIdOf } from "../../rpc/protocol/internal_error.ts";
import { serve } from "../../rpc/server/server.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { GreeterService } from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { client, FABRIC_LABEL, pattern, SMALL_REGION } from "../fabric/util.ts";
import { PLANES, withServer, withTransport } from "../connect/util.ts";

const SECRET = "boom secret internal";

const services = {
  "t.S": {
    Boom(): Uint8Array {
      throw new Error(SECRET);
    },
    async AsyncBoom(): Promise<Uint8Array> {
      await new Promise((r) => setTimeout(r, 1));
      throw new TypeError(SECRET);
    },
    Thrown(): Uint8Array {
      throw SECRET; // not even an Error
    },
    Kept(): Uint8Array {
      throw new RpcError(4242, "teapot: thrown on purpose");
    },
  },
};

/** Checks `e` is the generic answer and that exactly one log line holds its id and the secret. */
function checkGeneric(e: RpcError, log: string[], what: string): void {
  assertEquals(e.errorCode, EINTERNAL, what);
  const id = internalErrorIdOf(e.errorText);
  assert(id !== undefined, `${what}: generic text with an id, got ${JSON.stringify(e.errorText)}`);
  assert(!e.message.includes("secret") && !e.errorText.includes("secret"), `${what}: ${e.message}`);
  const lines = log.filter((l) => l.includes(id));
  assertEquals(lines.length, 1, `${what}: one log line with id ${id} in ${log.join("\n")}`);
  assert(lines[0].includes(SECRET), `${what}: the log has the error: ${lines[0]}`);
}

test("TCP (baidu_std): a plain throw is 'internal error (id …)', the log has id, text and stack", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    services,
    fabric: false,
    logger: { warn: (m) => log.push(m), info: () => {} },
  });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const none = new Uint8Array(0);
    const ids = new Set<string>();
    for (const m of ["Boom", "AsyncBoom", "Thrown"]) {
      const e = await assertRejects(() => ch.call("t.S", m, none), RpcError);
      checkGeneric(e, log, m);
      ids.add(internalErrorIdOf(e.errorText)!);
    }
    assertEquals(ids.size, 3, "a fresh id per error");
    const boom = log.find((l) => l.includes("t.S.Boom"))!;
    // (the server's logger may escape the stack's newlines)
    assert(/(\n|\\x0a)\s+at Boom /.test(boom), `the stack is logged: ${boom}`);
    const kept = await assertRejects(() => ch.call("t.S", "Kept", none), RpcError);
    assertEquals([kept.errorCode, kept.errorText], [4242, "teapot: thrown on purpose"]);
  } finally {
    ch.close();
    await server.close();
  }
});

test("fabric EAGER, LAZY, BULK and TCP_FALLBACK: the same generic answer; RpcError kept", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    services,
    fabric: { region: SMALL_REGION },
    logger: { warn: (m) => log.push(m), info: () => {} },
  });
  const c = await client(server);
  try {
    assertEquals(c.fabric, FABRIC_LABEL);
    const small = pattern(100, 1);
    const cases = [
      ["EAGER", () => c.call("t.S", "Boom", small)],
      ["LAZY", () => c.call("t.S", "AsyncBoom", small, { expectedResponseBytes: 100_000 })],
      ["BULK", () => c.call("t.S", "Boom", pattern(300_000, 2))],
      ["TCP_FALLBACK", () => c.call("t.S", "Boom", small, { forcePath: "TCP_FALLBACK" })],
    ] as const;
    for (const [path, call] of cases) checkGeneric(await assertRejects(call, RpcError), log, path);
    const kept = await assertRejects(() => c.call("t.S", "Kept", small), RpcError);
    assertEquals([kept.errorCode, kept.errorText], [4242, "teapot: thrown on purpose"]);
  } finally {
    await c.close();
    await server.close();
  }
});

test("Connect: a plain throw is Internal 'internal error (id …)'; a ConnectError keeps its text", async () => {
  const impl = {
    greet(req: { name: string }): never {
      if (req.name === "plain") throw new Error(SECRET);
      throw new ConnectError("not yet: thrown on purpose", Code.FailedPrecondition);
    },
  };
  await withServer([[GreeterService, impl]], async (_server, warnings) => {
    for (const plane of PLANES) {
      await withTransport(_server, plane.options, async (t) => {
        const greeter = createClient(GreeterService, t);
        const plain = await assertRejects(() => greeter.greet({ name: "plain" }), ConnectError);
        assertEquals(Code[plain.code], "Internal", plane.name);
        const id = internalErrorIdOf(plain.rawMessage);
        assert(id !== undefined, `${plane.name}: ${plain.rawMessage}`);
        assert(!plain.message.includes("secret"), plain.message);
        const line = warnings.find((w) => w.includes(id));
        assert(line?.includes(SECRET), `${plane.name}: logged with its id: ${warnings}`);
        const kept = await assertRejects(() => greeter.greet({ name: "x" }), ConnectError);
        assertEquals(
          [Code[kept.code], kept.rawMessage],
          ["FailedPrecondition", "not yet: thrown on purpose"],
        );
      });
    }
  });
});
