/**
 * Call metadata on the fabric (rpc/session/meta_block.ts), byte-level, over the fabric the run
 * selects (shm, simulated URMA, verbs in the VM): request user_fields and request_id reach the
 * handler and the call stays EAGER; response user_fields, trailers and error details come back
 * (inline, LAZY and error answers); headers past the bound go over TCP with the size logged;
 * an answer's metadata past the bound is an error naming the size; a lying peer's block — too
 * long or malformed, either way — fails that call only, and the session and server go on.
 */
import type { Handler, ServerCall } from "../../rpc/protocol/dispatch.ts";
import { ServerSession } from "../../rpc/session/server/server_session.ts";
import { EINTERNAL, EREQUEST, RpcError } from "../../rpc/errors.ts";
import { MetaBlockEncoder } from "../../rpc/session/meta_block.ts";
import { VerbusError } from "../../errors.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { client, FABRIC_LABEL, pattern, startServer } from "./util.ts";

const enc = new TextEncoder();
const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/** `test.Meta`: Echo answers with the request headers it saw, as response headers and trailers. */
function metaService(seen: { fields?: Record<string, string>; requestId?: string }[]) {
  const echo: Handler = (req, ctx) => {
    seen.push({
      fields: ctx.userFields ? Object.fromEntries(ctx.userFields) : undefined,
      requestId: ctx.requestId,
    });
    ctx.responseUserFields = new Map([["x-served-by", "meta"], ...(ctx.userFields ?? [])]);
    ctx.responseTrailers = new Map([["x-checksum", String(req.length)]]);
    return req;
  };
  const fail: Handler = (_req, ctx) => {
    if (!((ctx as ServerCall).sink instanceof ServerSession)) throw new Error("not on the fabric");
    ctx.responseUserFields = new Map([["x-why", "because"]]);
    ctx.responseTrailers = new Map([["x-retry-in", "5"]]);
    const e = new RpcError(EINTERNAL, "refused with details");
    e.details = [{ type: "test.Detail", value: enc.encode("detail bytes") }];
    throw e;
  };
  const huge: Handler = (req, ctx) => {
    ctx.responseUserFields = new Map([[
      "x-big",
      "v".repeat(Number(new TextDecoder().decode(req))),
    ]]);
    return req;
  };
  const lazy: Handler = (req, ctx) => {
    ctx.responseUserFields = new Map([["x-lazy", String(req.length)]]);
    return pattern(30_000, 5);
  };
  return { "test.Meta": { Echo: echo, Fail: fail, Huge: huge, Lazy: lazy } };
}

test("request headers and request_id reach the handler; answers bring headers and trailers; EAGER stays", async () => {
  const seen: { fields?: Record<string, string>; requestId?: string }[] = [];
  const { server } = await startServer({}, metaService(seen));
  const c = await client(server);
  try {
    assertEquals(c.fabric, FABRIC_LABEL);
    const userFields = new Map([["traceparent", TRACEPARENT]]);
    for (let i = 0; i < 100; i++) {
      const r = await c.call("test.Meta", "Echo", pattern(100, i), { userFields });
      assertEquals(r.response, pattern(100, i));
      assertEquals(r.path, "EAGER");
      assertEquals(Object.fromEntries(r.userFields!), {
        "x-served-by": "meta",
        traceparent: TRACEPARENT,
      });
      assertEquals(Object.fromEntries(r.trailers!), { "x-checksum": "100" });
    }
    assertEquals(c.stats().calls.EAGER, 100);
    assertEquals(seen[99], { fields: { traceparent: TRACEPARENT }, requestId: undefined });
    // request_id alone, and with log_id; a call without headers answers without them.
    await c.call("test.Meta", "Echo", pattern(5, 1), { requestId: "req-9", logId: 7 });
    assertEquals(seen[100], { fields: undefined, requestId: "req-9" });
    const plain = await c.call("test.Fabric", "Echo", pattern(5, 1));
    assertEquals([plain.userFields, plain.trailers], [undefined, undefined]);
    // LAZY and BULK carry them too (the block sits in the slot's area either way).
    const lazy = await c.call("test.Meta", "Echo", pattern(30_000, 2), {
      userFields,
      expectedResponseBytes: 30_000,
    });
    assertEquals([lazy.path, lazy.response, lazy.userFields?.get("traceparent")], [
      "BULK",
      pattern(30_000, 2),
      TRACEPARENT,
    ]);
    assertEquals(lazy.trailers?.get("x-checksum"), "30000");
    const big = await c.call("test.Meta", "Lazy", pattern(7, 1), {
      userFields,
      expectedResponseBytes: 30_000,
    });
    assertEquals([big.path, big.response, big.userFields?.get("x-lazy")], [
      "LAZY",
      pattern(30_000, 5),
      "7",
    ]);
    // Non-ASCII survives (UTF-8 in the block).
    const r = await c.call("test.Meta", "Echo", pattern(3, 3), {
      userFields: new Map([["x-name", "Zoë ✓"]]),
    });
    assertEquals(r.userFields?.get("x-name"), "Zoë ✓");
    assertEquals(c.stats().calls.TCP_FALLBACK, 0);
  } finally {
    await c.close();
    await server.close();
  }
});

test("an options object reused with other headers sends the headers it holds at each call", async () => {
  const seen: { fields?: Record<string, string> }[] = [];
  const { server } = await startServer({}, metaService(seen));
  const c = await client(server);
  try {
    const fields = new Map([["x-n", "1"]]);
    const options: { userFields: Map<string, string>; forcePath?: "TCP_FALLBACK" } = {
      userFields: fields,
    };
    const paths: string[] = [];
    paths.push((await c.call("test.Meta", "Echo", pattern(4, 1), options)).path);
    options.forcePath = "TCP_FALLBACK";
    fields.set("x-n", "2");
    paths.push((await c.call("test.Meta", "Echo", pattern(4, 1), options)).path);
    delete options.forcePath;
    fields.set("x-n", "3");
    paths.push((await c.call("test.Meta", "Echo", pattern(4, 1), options)).path);
    assertEquals(paths, ["EAGER", "TCP_FALLBACK", "EAGER"]);
    assertEquals(seen.map((s) => s.fields?.["x-n"]), ["1", "2", "3"]);
  } finally {
    await c.close();
    await server.close();
  }
});

test("an error answer brings its details, headers and trailers on the fabric", async () => {
  const { server } = await startServer({}, metaService([]));
  const c = await client(server);
  try {
    const e = await assertRejects(() => c.call("test.Meta", "Fail", pattern(3, 1)), RpcError);
    assertEquals(e.errorCode, EINTERNAL);
    assertEquals(e.errorText, "refused with details");
    assertEquals(e.details?.map((d) => [d.type, new TextDecoder().decode(d.value)]), [
      ["test.Detail", "detail bytes"],
    ]);
    assertEquals(e.userFields?.get("x-why"), "because");
    assertEquals(e.trailers?.get("x-retry-in"), "5");
    assertEquals((await c.call("test.Fabric", "Echo", pattern(3, 1))).path, "EAGER");
  } finally {
    await c.close();
    await server.close();
  }
});

test("headers past the fabric's bound go over TCP, the size logged; an answer's past it is an error naming it", async () => {
  const seen: { fields?: Record<string, string> }[] = [];
  const { server } = await startServer({}, metaService(seen));
  const logged: string[] = [];
  const c = await client(server, { logger: { warn: (m) => logged.push(m) } });
  try {
    const bound = c.session!.metaBound; // 2048 B with the test's 4 KiB slots
    const big = new Map([["x-big", "b".repeat(bound)]]);
    const r = await c.call("test.Meta", "Echo", pattern(10, 1), { userFields: big });
    assertEquals([r.path, r.response], ["TCP_FALLBACK", pattern(10, 1)]);
    assertEquals(seen[0].fields?.["x-big"]?.length, bound, "the handler got it whole, over TCP");
    assertEquals(r.userFields?.get("x-big")?.length, bound);
    assertEquals(logged.length, 1, logged.join("\n"));
    assert(
      /a call's headers make a \d+-byte metadata block, past the fabric's bound of 2048 bytes: it goes over TCP/
        .test(logged[0]),
      logged[0],
    );
    // The answer's metadata past the bound: the call fails, naming the size; the session goes on.
    const e = await assertRejects(
      () => c.call("test.Meta", "Huge", enc.encode(String(bound))),
      RpcError,
    );
    assert(
      /metadata block of \d+ bytes exceeds the fabric bound of 2048 bytes/.test(e.errorText),
      e.errorText,
    );
    const ok = await c.call("test.Meta", "Huge", enc.encode("100"));
    assertEquals([ok.path, ok.userFields?.get("x-big")?.length], ["EAGER", 100]);
    assertEquals(server.fabric!.sessions.size, 1);
  } finally {
    await c.close();
    await server.close();
  }
});

/** Runs `fn` with `MetaBlockEncoder.prototype[name]` replaced by a liar writing `bytes`. */
async function lying(
  name: "request" | "answer",
  bytes: Uint8Array,
  fn: () => Promise<void>,
): Promise<void> {
  const proto = MetaBlockEncoder.prototype as unknown as Record<string, unknown>;
  const honest = proto[name];
  proto[name] = function (this: MetaBlockEncoder, ...args: unknown[]) {
    const n = (honest as (...a: unknown[]) => number).apply(this, args);
    if (n <= 0) return n;
    this.bytes.set(bytes);
    return this.length = bytes.length;
  };
  try {
    await fn();
  } finally {
    proto[name] = honest;
  }
}

const MALFORMED = Uint8Array.of(0x4a, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3); // user_fields, length 4 GiB
const TOO_LONG = new Uint8Array(3000); // past the 2048-byte bound

test("a lying client's metadata block (malformed, too long) fails that call with EREQUEST; the session goes on", async () => {
  const { server, log } = await startServer({}, metaService([]));
  const c = await client(server);
  const userFields = new Map([["traceparent", TRACEPARENT]]);
  try {
    for (
      const [bytes, why] of [[MALFORMED, /malformed \(undecodable RpcMeta/], [
        TOO_LONG,
        /of 3000 bytes exceeds the fabric bound of 2048 bytes/,
      ]] as const
    ) {
      await lying("request", bytes, async () => {
        const e = await assertRejects(
          () => c.call("test.Meta", "Echo", pattern(10, 1), { userFields }),
          RpcError,
        );
        assertEquals(e.errorCode, EREQUEST);
        assert(why.test(e.errorText), e.errorText);
      });
      const r = await c.call("test.Meta", "Echo", pattern(10, 2), { userFields });
      assertEquals([r.path, r.userFields?.get("traceparent")], ["EAGER", TRACEPARENT]);
    }
    assertEquals(server.fabric!.sessions.size, 1);
    assertEquals(c.fabric, FABRIC_LABEL);
    assertEquals(log.warnings.filter((w) => w.includes("a request refused")).length, 1);
  } finally {
    await c.close();
    await server.close();
  }
});

test("a lying server's metadata block (malformed, too long) fails that call with PROTOCOL; the session goes on", async () => {
  const { server } = await startServer({}, metaService([]));
  const c = await client(server);
  const userFields = new Map([["traceparent", TRACEPARENT]]);
  try {
    for (
      const [bytes, why] of [[MALFORMED, /malformed/], [
        TOO_LONG,
        /exceeds the fabric bound/,
      ]] as const
    ) {
      for (
        const [body, options] of [[pattern(10, 1), { userFields }], [pattern(30_000, 1), {
          userFields,
          expectedResponseBytes: 30_000,
        }]] as const
      ) {
        await lying("answer", bytes, async () => {
          const e = await assertRejects(
            () => c.call("test.Meta", "Echo", body, options),
            VerbusError,
          );
          assertEquals(e.code, "PROTOCOL");
          assert(why.test(e.message), e.message);
        });
      }
      const r = await c.call("test.Meta", "Echo", pattern(10, 2), { userFields });
      assertEquals([r.path, r.userFields?.get("traceparent")], ["EAGER", TRACEPARENT]);
    }
    assertEquals(server.fabric!.sessions.size, 1);
    assertEquals(c.fabric, FABRIC_LABEL);
  } finally {
    await c.close();
    await server.close();
  }
});
