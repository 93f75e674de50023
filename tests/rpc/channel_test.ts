/**
 * The channel: pipelining with correct correlation, timeouts, close, reconnect after the server
 * went away (in process and a killed server process).
 */
import {
  ClosedError,
  ConnectFailedError,
  ConnectionClosedError,
  TimeoutError,
  VerbusError,
} from "../../errors.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { RpcError } from "../../rpc/errors.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { spawnScript } from "../util/proc.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quiet = { warn() {} };

const services: Record<string, Record<string, Handler>> = {
  "t.S": {
    // answers "<request>!" after a delay that depends on the request, so answers come back out
    // of order; the attachment is the request reversed
    async Mix(req, ctx) {
      const n = Number(td.decode(req));
      if (n % 3 !== 0) await sleep(n % 7);
      ctx.responseAttachment = req.slice().reverse();
      return te.encode(`${n}!`);
    },
    async Sleep(req) {
      await sleep(Number(td.decode(req)));
      return te.encode("slept");
    },
    Echo: (req) => req,
  },
};

test("1000 calls pipelined on one channel each get their own answer", async () => {
  const server = await serve({ port: 0, services, logger: quiet });
  const ch = await connect(`127.0.0.1:${server.port}`);
  try {
    const calls = Array.from(
      { length: 1000 },
      (_, i) => ch.call("t.S", "Mix", te.encode(String(i))),
    );
    assertEquals(ch.pendingCalls, 1000);
    const answers = await Promise.all(calls);
    for (let i = 0; i < 1000; i++) {
      assertEquals(td.decode(answers[i].response), `${i}!`, `call ${i}`);
      assertEquals(answers[i].attachment, te.encode(String(i)).reverse(), `attachment ${i}`);
    }
    assertEquals(ch.pendingCalls, 0);
    assertEquals(server.stats().calls, 1000);
  } finally {
    await ch.close();
    await server.close();
  }
});

test("a call slower than its timeout fails with TIMEOUT; the late answer is dropped; the channel works on", async () => {
  const server = await serve({ port: 0, services, logger: quiet });
  // default timeout (one channel-wide timer) and a per-call timeout (own timer)
  const ch = await connect({ host: "127.0.0.1", port: server.port }, { timeoutMs: 60 });
  try {
    const t0 = Date.now();
    const e = await assertRejects(
      () => ch.call("t.S", "Sleep", te.encode("300")),
      TimeoutError,
      "timed out after 60 ms",
    );
    assertEquals(e.code, "TIMEOUT");
    assert(Date.now() - t0 < 250, `took ${Date.now() - t0} ms`);
    const e2 = await assertRejects(
      () => ch.call("t.S", "Sleep", te.encode("300"), { timeoutMs: 30 }),
      TimeoutError,
      "t.S.Sleep",
    );
    assertEquals(e2.context.timeoutMs, 30);
    // a fast call alongside a slow one
    const slow = ch.call("t.S", "Sleep", te.encode("200"), { timeoutMs: 40 });
    assertEquals(td.decode((await ch.call("t.S", "Echo", te.encode("quick"))).response), "quick");
    await assertRejects(() => slow, TimeoutError);
    await sleep(350); // the late answers arrive now and must be ignored
    assertEquals(ch.pendingCalls, 0);
    assertEquals(
      td.decode((await ch.call("t.S", "Echo", te.encode("still fine"))).response),
      "still fine",
    );
    assert(ch.connected);
    const bad = await assertRejects(
      () => ch.call("t.S", "Echo", new Uint8Array(0), { timeoutMs: -1 }),
      VerbusError,
    );
    assertEquals(bad.code, "INVALID_OPTIONS");
  } finally {
    await ch.close();
    await server.close();
  }
});

test("close(): pending calls reject with ClosedError, close twice is fine, later calls reject", async () => {
  const server = await serve({ port: 0, services, logger: quiet });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const pending = ch.call("t.S", "Sleep", te.encode("1000")).catch((e) => e);
    await ch.close();
    await ch.close();
    const e = await pending;
    assert(e instanceof ClosedError, `got ${e}`);
    assertEquals(e.code, "CLOSED");
    await assertRejects(() => ch.call("t.S", "Echo", new Uint8Array(1)), ClosedError);
    const ch2 = await connect({ host: "127.0.0.1", port: server.port });
    ch2[Symbol.dispose]();
    assert(!ch2.connected);
    const ch3 = await connect({ host: "127.0.0.1", port: server.port });
    await ch3[Symbol.asyncDispose]();
    await assertRejects(() => ch3.call("t.S", "Echo", new Uint8Array(1)), ClosedError);
  } finally {
    await server.close();
  }
});

test("connect errors and invalid options name what was wrong", async () => {
  const server = await serve({ port: 0, services, logger: quiet });
  const port = server.port;
  await server.close();
  const e = await assertRejects(
    () => connect({ host: "127.0.0.1", port }),
    ConnectFailedError,
    `127.0.0.1:${port}`,
  );
  assertEquals(e.code, "CONNECT_FAILED");
  for (
    const [addr, opts, field] of [
      ["127.0.0.1", {}, "port"],
      ["127.0.0.1:99999", {}, "port"],
      [{ host: "", port: 1 }, {}, "host"],
      ["127.0.0.1:1", { timeoutMs: 0 }, "timeoutMs"],
      ["127.0.0.1:1", { connectTimeoutMs: "x" }, "connectTimeoutMs"],
      ["127.0.0.1:1", { nope: 1 }, "nope"],
    ] as const
  ) {
    // deno-lint-ignore no-explicit-any
    const err = await assertRejects(() => connect(addr as any, opts as any), VerbusError, field);
    assertEquals(err.code, "INVALID_OPTIONS", JSON.stringify([addr, opts]));
  }
});

test("the next call reconnects after the server closed the connection", async () => {
  const server = await serve({ port: 0, services, logger: quiet });
  const port = server.port;
  const ch = await connect({ host: "127.0.0.1", port });
  let server2;
  try {
    assertEquals(td.decode((await ch.call("t.S", "Echo", te.encode("one"))).response), "one");
    await server.close();
    while (ch.connected) await sleep(5);
    await assertRejects(() => ch.call("t.S", "Echo", te.encode("x")), ConnectFailedError);
    server2 = await serve({ port, services, logger: quiet });
    assertEquals(td.decode((await ch.call("t.S", "Echo", te.encode("two"))).response), "two");
    assert(ch.connected);
  } finally {
    await ch.close();
    await server.close();
    await server2?.close();
  }
});

test("calls made while the channel reconnects each send their own method, request and options", async () => {
  const server = await serve({ port: 0, services, logger: quiet });
  const port = server.port;
  const ch = await connect({ host: "127.0.0.1", port });
  let server2;
  try {
    await server.close();
    while (ch.connected) await sleep(5);
    server2 = await serve({ port, services, logger: quiet });
    // Every call below starts with no connection up and waits for the same reconnect.
    const calls = [];
    for (let i = 0; i < 20; i++) {
      const method = i % 2 === 0 ? "Mix" : "Echo";
      calls.push(ch.call("t.S", method, te.encode(String(i)), { attachment: te.encode(`a${i}`) }));
    }
    const answers = await Promise.all(calls);
    for (let i = 0; i < 20; i++) {
      const r = answers[i];
      if (i % 2 === 0) {
        assertEquals(td.decode(r.response), `${i}!`, `call ${i} (Mix)`);
        assertEquals(td.decode(r.attachment), String(i).split("").reverse().join(""));
      } else assertEquals(td.decode(r.response), String(i), `call ${i} (Echo)`);
    }
  } finally {
    await ch.close();
    await server.close();
    await server2?.close();
  }
});

test(
  "server process killed mid-call: CONNECTION_CLOSED, then a restarted server is reached",
  async () => {
    let child = await spawnScript(RUNTIME as "deno" | "bun", "tests/fixtures/echo_server.ts");
    const port = child.port;
    const ch = await connect({ host: "127.0.0.1", port }, { timeoutMs: 20_000 });
    try {
      assertEquals(
        td.decode((await ch.call("example.EchoService", "Echo", te.encode("before"))).response),
        "before",
      );
      // handlers attached at once: the rejections happen while the test awaits the kill
      const pending = ch.call("example.EchoService", "Slow", te.encode("10000")).catch((e) => e);
      const pending2 = ch.call("example.EchoService", "Slow", te.encode("10000")).catch((e) => e);
      await sleep(50);
      await child.kill("SIGKILL");
      const e = await pending;
      assert(e instanceof ConnectionClosedError, `got ${e}`);
      assert(e.message.includes(`127.0.0.1:${port}`), e.message);
      assertEquals(e.code, "CONNECTION_CLOSED");
      assert((await pending2) instanceof ConnectionClosedError);
      child = await spawnScript(RUNTIME as "deno" | "bun", "tests/fixtures/echo_server.ts", {
        args: ["--port", String(port)],
      });
      const r = await ch.call("example.EchoService", "Echo", te.encode("after"), {
        attachment: te.encode("a"),
      });
      assertEquals(td.decode(r.response), "after");
      assertEquals(td.decode(r.attachment), "a");
      const rpc = await assertRejects(
        () => ch.call("example.Missing", "X", new Uint8Array(0)),
        RpcError,
      );
      assertEquals(rpc.errorCode, 1001);
    } finally {
      await ch.close();
      await child.kill();
    }
  },
  { timeoutMs: 60_000 },
);
