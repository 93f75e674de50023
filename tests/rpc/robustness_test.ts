/**
 * A server under bad input: random bytes, broken headers, bad metas, truncated frames, each on
 * its own raw TCP connection, while a correct client has calls in flight. Only the offending
 * connection is closed (one log line each); everyone else keeps being served.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import {
  encodeFrame,
  FRAME_HEADER_SIZE,
  FrameParser,
  writeHeader,
} from "../../rpc/protocol/frame.ts";
import { encodeRpcMeta, type RpcMeta } from "../../rpc/protocol/rpc_meta.ts";
import { type Handler, serve } from "../../rpc/server/server.ts";
import { EREQUEST, ERESPONSE, RpcError } from "../../rpc/errors.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { assert, assertEquals, test } from "../harness.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const services: Record<string, Record<string, Handler>> = {
  "t.S": {
    Echo: (req) => req,
    async Slow(req) {
      await sleep(150);
      return req;
    },
  },
};

/** Deterministic pseudo-random bytes. */
function rng(seed: number): (n: number) => Uint8Array {
  let x = seed >>> 0 || 1;
  return (n) => {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      b[i] = x & 0xff;
    }
    return b;
  };
}

function frameWith(
  metaBytes: Uint8Array,
  body: Uint8Array,
  metaSize = metaBytes.length,
): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_SIZE + metaBytes.length + body.length);
  writeHeader(out, 0, metaBytes.length + body.length, metaSize);
  out.set(metaBytes, FRAME_HEADER_SIZE);
  out.set(body, FRAME_HEADER_SIZE + metaBytes.length);
  return out;
}

function request(id: number, payload: Uint8Array): Uint8Array {
  return encodeFrame(
    { request: { serviceName: "t.S", methodName: "Echo" }, correlationId: id },
    payload,
  );
}

interface Outcome {
  /** Whether the server closed the connection (vs. we gave up waiting and closed it). */
  closedByServer: boolean;
  answers: RpcMeta[];
}

/** Sends `bytes` on a fresh connection and watches what the server does for `waitMs`. */
async function attack(port: number, bytes: Uint8Array, waitMs = 300): Promise<Outcome> {
  const conn = await tcp.connect({ host: "127.0.0.1", port });
  const answers: RpcMeta[] = [];
  const parser = new FrameParser((m) => answers.push(m));
  conn.onData((c) => parser.push(c));
  const closed = new Promise<boolean>((r) => conn.onClose((e) => r(e !== undefined)));
  conn.write(bytes);
  const byServer = await Promise.race([closed, sleep(waitMs).then(() => false)]);
  conn.close();
  return { closedByServer: byServer, answers };
}

test("garbage, broken and truncated frames close only their own connection", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    services,
    logger: { warn: (m) => void log.push(m) },
    maxBodySize: 1 << 20,
  });
  const good = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const inflight = Array.from(
      { length: 50 },
      (_, i) => good.call("t.S", "Slow", te.encode(`slow ${i}`)).catch((e) => e as Error),
    );
    const meta = encodeRpcMeta({
      request: { serviceName: "t.S", methodName: "Echo" },
      correlationId: 1,
    }).slice();
    const badAttachment = encodeRpcMeta({
      request: { serviceName: "t.S", methodName: "Echo" },
      attachmentSize: 99,
    })
      .slice();
    const mustClose: [string, Uint8Array][] = [
      ["http", te.encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n")],
      [
        "oversize",
        frameWith(new Uint8Array(0), new Uint8Array(0), 0).map((b, i) => (i === 5 ? 0x20 : b)),
      ],
      ["meta > body", frameWith(meta, new Uint8Array(4), meta.length + 10)],
      ["garbage meta", frameWith(new Uint8Array([0xff, 0xff, 0xff, 0xff]), new Uint8Array(8))],
      ["attachment too big", frameWith(badAttachment, new Uint8Array(10))],
      [
        "valid then garbage",
        new Uint8Array([...request(7, te.encode("a")), ...request(8, te.encode("b")), 1, 2, 3, 4]),
      ],
    ];
    const rand = rng(12345);
    for (let i = 0; i < 20; i++) {
      const b = rand(1 + ((i * 397) % 5000));
      b[0] = b[0] === 0x50 ? 0x51 : b[0]; // never a valid first magic byte
      mustClose.push([`random ${i}`, b]);
    }
    for (const [name, bytes] of mustClose) {
      const out = await attack(server.port, bytes);
      assert(out.closedByServer, `${name}: the server should have closed the connection`);
      // The last frame says why: an EREQUEST answer to correlation_id 0 (no call's id).
      const last = out.answers.at(-1);
      assertEquals(last?.correlationId, 0, `${name}: the reason comes last`);
      assertEquals(last?.response?.errorCode, EREQUEST, `${name}: reason code`);
      assert(last?.response?.errorText?.startsWith("protocol error: "), `${name}: reason text`);
      if (name === "valid then garbage") {
        assertEquals(
          out.answers.map((a) => a.correlationId),
          [7, 8, 0],
          "valid frames before the garbage are answered, then the reason",
        );
      }
    }
    // never completed: the server waits for more, and cleans up when the peer goes away
    const truncated: Uint8Array[] = [
      request(3, new Uint8Array(1000)).subarray(0, 500),
      request(4, new Uint8Array(10)).subarray(0, 7),
      te.encode("PRP"),
    ];
    for (let i = 0; i < 10; i++) {
      const header = new Uint8Array(12);
      writeHeader(header, 0, 1000 + i, 3);
      truncated.push(new Uint8Array([...header, ...rand(i * 50)]));
    }
    for (const bytes of truncated) {
      const out = await attack(server.port, bytes, 100);
      assert(!out.closedByServer, "a truncated frame is not an error while the stream is open");
    }
    const answers = await Promise.all(inflight);
    answers.forEach((a, i) => {
      assert(!(a instanceof Error), `in-flight call ${i} failed: ${a}`);
      assertEquals(td.decode((a as { response: Uint8Array }).response), `slow ${i}`);
    });
    assertEquals(td.decode((await good.call("t.S", "Echo", te.encode("after"))).response), "after");
    const fresh = await connect({ host: "127.0.0.1", port: server.port });
    assertEquals(
      td.decode((await fresh.call("t.S", "Echo", te.encode("fresh"))).response),
      "fresh",
    );
    await fresh.close();
    const stats = server.stats();
    assertEquals(stats.protocolErrors, mustClose.length);
    // Logged once per kind of error in a window (a flood of bad connections must not flood the
    // log); the repeats are said in one summary line per kind when the window ends — here, when
    // the server closes. Every bad connection is accounted for, in a line or a summary.
    assert(log.every((l) => l.includes("protocol error")), log.join("\n"));
    assert(
      log.some((l) => l.includes("bad magic")) &&
        log.some((l) => l.includes("max_body_size=1048576")),
    );
    const firstLines = log.length;
    assert(
      firstLines >= 5 && firstLines < mustClose.length,
      `one line per kind:\n${log.join("\n")}`,
    );
    for (let i = 0; i < 100 && server.stats().connections > 1; i++) await sleep(10);
    assertEquals(server.stats().connections, 1, "only the good connection is left");
    await good.close();
    await server.close();
    const repeats = log.slice(firstLines).reduce((n, l) => {
      const m = / … and (\d+) more like this /.exec(l);
      assert(m !== null, `a summary line: ${l}`);
      return n + Number(m![1]);
    }, 0);
    assertEquals(
      firstLines + repeats,
      mustClose.length,
      `every bad connection:\n${log.join("\n")}`,
    );
  } finally {
    await good.close();
    await server.close();
  }
}, { timeoutMs: 60_000 });

test("a flood of pipelined frames in one write is answered completely", async () => {
  const server = await serve({ port: 0, services, logger: { warn() {} } });
  try {
    const frames: Uint8Array[] = [];
    for (let i = 0; i < 2000; i++) frames.push(request(i + 1, te.encode(`m${i}`)));
    const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let o = 0;
    for (const f of frames) (all.set(f, o), o += f.length);
    const conn = await tcp.connect({ host: "127.0.0.1", port: server.port });
    const got: string[] = [];
    const done = new Promise<void>((resolve) => {
      const parser = new FrameParser((m, p) => {
        got.push(`${m.correlationId}:${td.decode(p)}`);
        if (got.length === 2000) resolve();
      });
      conn.onData((c) => parser.push(c));
    });
    conn.write(all);
    await done;
    conn.close();
    assertEquals(got[0], "1:m0");
    assertEquals(got[1999], "2000:m1999");
    assertEquals(new Set(got).size, 2000);
  } finally {
    await server.close();
  }
});

test("an answer past the server's max_body_size fails that call only (ERESPONSE naming the sizes); the connection serves on", async () => {
  const big = new Uint8Array(2 << 20);
  const server = await serve({
    port: 0,
    services: {
      "t.S": {
        ...services["t.S"],
        Big: () => big,
        BigAttachment: (_req, ctx) => {
          ctx.responseAttachment = big;
          return new Uint8Array(0);
        },
      },
    },
    logger: { warn: () => {} },
    maxBodySize: 1 << 20,
  });
  // The client accepts far larger frames: without the server's check the 2 MiB answer would be
  // sent and the call would succeed; a client with the server's own limit would break.
  const c = await connect({ host: "127.0.0.1", port: server.port }, { maxBodySize: 8 << 20 });
  try {
    for (const method of ["Big", "BigAttachment"]) {
      const e = await c.call("t.S", method, te.encode("x")).then(() => null, (e) => e as RpcError);
      assert(e instanceof RpcError, `${method}: ${e}`);
      assertEquals(e.errorCode, ERESPONSE);
      assert(
        e.errorText.includes(`${2 << 20} bytes`) && e.errorText.includes(`${1 << 20}`),
        e.errorText,
      );
    }
    assertEquals(td.decode((await c.call("t.S", "Echo", te.encode("after"))).response), "after");
  } finally {
    await c.close();
    await server.close();
  }
});
