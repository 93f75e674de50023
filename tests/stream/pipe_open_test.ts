/**
 * Streams opened on a fabric session: the opening call rides the session's stream pipe, not the
 * TCP connection (nothing is pending on the channel while it waits); its request headers,
 * `timeout_ms`, `log_id` and `request_id` reach the handler, the answer's headers and trailers
 * come back, an error answer or a handler that accepts nothing refuses the stream, a handler
 * that never answers times the open out, a session that ends fails the opens waiting on it, and
 * a pipe that carries a call frame the side does not take (a request at the client, a request
 * opening no stream at the server) fails that session only.
 */
import { ConnectionClosedError, TimeoutError } from "../../errors.ts";
import { ELIMIT, RpcError } from "../../rpc/errors.ts";
import type { CallContext, ServerCall } from "../../rpc/protocol/dispatch.ts";
import { encodeFrame } from "../../rpc/protocol/frame.ts";
import { encodeStreamSettings } from "../../rpc/protocol/stream_frame.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import { MAX_PIPE_CALLS_IN_FLIGHT } from "../../rpc/stream/pipe_calls.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { client, FABRIC_LABEL, startServer, until } from "../fabric/util.ts";

const te = new TextEncoder(), td = new TextDecoder();

interface Seen {
  calls: CallContext[];
  /** How to answer each `Later` call so far. */
  answers: ((b: Uint8Array) => void)[];
}

/** `S.Open` accepts a stream and echoes what arrives; `S.Later` answers when told; `S.Plain` accepts none; `S.Fail` throws. */
function service(seen: Seen) {
  return {
    S: {
      Open: (req: Uint8Array, ctx: CallContext) => {
        seen.calls.push(ctx);
        const s = acceptStream(ctx);
        (async () => {
          for await (const m of s) await s.write(m);
        })().catch(() => {});
        (ctx as ServerCall).responseUserFields = new Map([["x-answered", "on the pipe"]]);
        (ctx as ServerCall).responseTrailers = new Map([["x-trailer", "t"]]);
        return req;
      },
      Later: (_req: Uint8Array, ctx: CallContext) => {
        seen.calls.push(ctx);
        acceptStream(ctx);
        return new Promise<Uint8Array>((r) => seen.answers.push(r));
      },
      Plain: () => te.encode("no stream"),
      Fail: () => {
        throw new RpcError(4321, "refused by the handler");
      },
    },
  };
}

test(`the opening call rides the ${FABRIC_LABEL} session's pipe: nothing on TCP, headers both ways`, async () => {
  const seen: Seen = { calls: [], answers: [] };
  const { server } = await startServer({}, service(seen));
  const c = await client(server);
  try {
    const tcpBefore = c.channel.pendingCalls; // (the session's Watch call)
    const opening = openStream(c, "S", "Later", te.encode("hi"), {
      userFields: new Map([["traceparent", "00-abc"]]),
      logId: 77,
      requestId: "req-1",
      timeoutMs: 4000,
    });
    opening.catch(() => {}); // (awaited below; a failed check before must not leave it unhandled)
    await until(() => seen.calls.length === 1, 5000, "the handler to run");
    const fs = c._fabricStreams()!;
    assertEquals(fs.calls.waiting, 1);
    assertEquals(c.channel.pendingCalls, tcpBefore, "the opening call is pending on the channel");
    const ctx = seen.calls[0];
    assertEquals(ctx.userFields?.get("traceparent"), "00-abc");
    assertEquals(ctx.logId, 77);
    assertEquals(ctx.requestId, "req-1");
    assertEquals(ctx.timeoutMs, 4000);
    seen.answers[0](te.encode("later"));
    const { stream, response } = await opening;
    assertEquals(td.decode(response), "later");
    assertEquals(stream.carrier, FABRIC_LABEL);
    assertEquals(fs.calls.waiting, 0);
    stream.close();

    const opened = await openStream(c, "S", "Open", te.encode("hello"));
    assertEquals(td.decode(opened.response), "hello");
    assertEquals(opened.userFields?.get("x-answered"), "on the pipe");
    assertEquals(opened.trailers?.get("x-trailer"), "t");
    await opened.stream.write(te.encode("ping"));
    assertEquals(td.decode((await opened.stream.read())!), "ping");
    opened.stream.close();
    assertEquals((await c.channel._streams()).stats.opened, 0, "a stream went over TCP");
  } finally {
    await c.close();
    await server.close();
  }
});

test("on the pipe: an error answer rejects the open with its code, a handler that accepts nothing refuses the stream", async () => {
  const { server } = await startServer({}, service({ calls: [], answers: [] }));
  const c = await client(server);
  try {
    const e = await assertRejects(() => openStream(c, "S", "Fail", te.encode("x")), RpcError);
    assertEquals(e.errorCode, 4321);
    assert(e.errorText.includes("refused by the handler"), e.errorText);
    const r = await assertRejects(() => openStream(c, "S", "Plain", te.encode("x")), StreamError);
    assertEquals(r.kind, "refused");
    const none = await assertRejects(() => openStream(c, "S", "Nope", te.encode("x")), RpcError);
    assert(none.message.includes("Nope"), none.message);
    const fs = c._fabricStreams()!;
    assertEquals([fs.calls.waiting, fs.table.size], [0, 0]);
    const ok = await openStream(c, "S", "Open", te.encode("after"));
    assertEquals(td.decode(ok.response), "after");
    ok.stream.close();
  } finally {
    await c.close();
    await server.close();
  }
});

test("on the pipe: a handler that never answers times the open out; a session that ends fails the opens waiting", async () => {
  const seen: Seen = { calls: [], answers: [] };
  const { server } = await startServer({}, service(seen));
  const c = await client(server);
  try {
    const t = await assertRejects(
      () => openStream(c, "S", "Later", te.encode("x"), { timeoutMs: 200 }),
      TimeoutError,
    );
    assert(t.message.includes("200 ms"), t.message);
    // Without a timeout of its own, the client's default (connect's timeoutMs) bounds the open.
    const quick = await client(server, { timeoutMs: 300 });
    try {
      const d = await assertRejects(
        () => openStream(quick, "S", "Later", te.encode("x")),
        TimeoutError,
      );
      assert(d.message.includes("300 ms"), d.message);
    } finally {
      await quick.close();
    }
    const fs = c._fabricStreams()!;
    assertEquals([fs.calls.waiting, fs.table.size], [0, 0]);
    const waiting = openStream(c, "S", "Later", te.encode("x"), { timeoutMs: 5000 });
    waiting.catch(() => {}); // (awaited below)
    await until(() => seen.calls.length === 3, 5000, "the handler to run");
    c.session!.fail("the test ends the session");
    const e = await assertRejects(() => waiting, ConnectionClosedError);
    assert(e.message.includes("the test ends the session"), e.message);
    assertEquals(fs.calls.waiting, 0);
    // Opens after it go over TCP.
    const { stream } = await openStream(c, "S", "Open", te.encode("tcp"));
    assertEquals(stream.carrier, "tcp");
    stream.close();
  } finally {
    for (const answer of seen.answers) answer(new Uint8Array(0)); // the server's close waits for them
    await c.close();
    await server.close();
  }
});

test("on the pipe: past MAX_PIPE_CALLS_IN_FLIGHT opening calls running, the next ones are answered ELIMIT, not run", async () => {
  const seen: Seen = { calls: [], answers: [] };
  const { server } = await startServer({}, service(seen));
  const c = await client(server);
  try {
    const n = MAX_PIPE_CALLS_IN_FLIGHT + 3;
    const opens = Array.from(
      { length: n },
      () => openStream(c, "S", "Later", te.encode("x"), { timeoutMs: 20_000 }),
    );
    const limited = await Promise.allSettled(opens.slice(MAX_PIPE_CALLS_IN_FLIGHT));
    for (const r of limited) {
      assertEquals(r.status, "rejected");
      const e = (r as PromiseRejectedResult).reason as RpcError;
      assertEquals(e.errorCode, ELIMIT, String(e));
    }
    assertEquals(seen.calls.length, MAX_PIPE_CALLS_IN_FLIGHT);
    for (const answer of seen.answers) answer(te.encode("ok"));
    const ok = await Promise.all(opens.slice(0, MAX_PIPE_CALLS_IN_FLIGHT));
    for (const o of ok) o.stream.close();
    const again = await openStream(c, "S", "Open", te.encode("room again"));
    assertEquals(td.decode(again.response), "room again");
    again.stream.close();
  } finally {
    for (const answer of seen.answers) answer(new Uint8Array(0));
    await c.close();
    await server.close();
  }
});

test("a call frame the side does not take breaks the pipe: that session fails, the server serves on", async () => {
  const { server, log } = await startServer({}, service({ calls: [], answers: [] }));
  const settings = encodeStreamSettings({
    streamId: 1,
    needFeedback: false,
    writable: true,
    extraStreamIds: [],
  });
  const request = (streamSettings?: Uint8Array) =>
    encodeFrame({
      request: { serviceName: "S", methodName: "Open" },
      correlationId: 1,
      ...(streamSettings ? { streamSettings } : {}),
    }, te.encode("x"));
  // A request with no stream settings, sent by the client's pipe to the server.
  const c1 = await client(server);
  // A request sent by the server's pipe to a client.
  const c2 = await client(server);
  try {
    // The server breaks c1's pipe (its stream ends with the session: kind connection), c2 its own.
    for (
      const [c, send, want, kind] of [
        [c1, () => c1._fabricStreams()!.write(request()), "opens no stream", "connection"],
        // (c1's session has failed and gone by then: the last one is c2's)
        [
          c2,
          () => [...server.fabric!.sessions.values()].at(-1)!.streams.write(request(settings)),
          "a request frame at the client",
          "protocol",
        ],
      ] as const
    ) {
      const { stream } = await openStream(c, "S", "Open", te.encode("x"));
      (send as () => void)();
      const e = await stream.ended;
      assertEquals(e?.kind, kind);
      const said = kind === "protocol" ? e!.message : log.warnings.join("\n");
      assert(said.includes(want), said);
      await until(() => c.fabric === "tcp", 5000, "the session to fail");
      const r = await c.call("S", "Plain", te.encode("x"));
      assertEquals(r.path, "TCP_FALLBACK");
    }
    const c3 = await client(server);
    try {
      const ok = await openStream(c3, "S", "Open", te.encode("still"));
      assertEquals(ok.stream.carrier, FABRIC_LABEL);
      ok.stream.close();
    } finally {
      await c3.close();
    }
  } finally {
    await c1.close();
    await c2.close();
    await server.close();
  }
});
