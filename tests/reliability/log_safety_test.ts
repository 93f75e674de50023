/**
 * Logs a peer cannot forge or flood: what a peer sends (a Hello's unknown key, a frame's bad
 * magic) reaches the log escaped (no ESC, no newline: no forged `verbus serve:` line) and bounded
 * in length; repeats are rate-limited by a stable cause (2,000 Hellos each with its own unknown
 * key are one cause), and a flood of bad connections is one line and a summary. Before, each
 * unknown key was logged raw, twice (info and warn), once per Hello, and every bad-magic
 * connection wrote its own line.
 * @module
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { serve } from "../../rpc/server/server.ts";
import { encodeHello, FABRIC_SERVICE } from "../../rpc/session/handshake/hello.ts";
import { tcp } from "../../transport/tcp/mod.ts";
import { causeKey, peerText } from "../../util/log_text.ts";
import { LogLimiter } from "../../util/log_limiter.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { sleep } from "./tcp_peers.ts";
import { validHello } from "./util.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const FORGE = (i: number) =>
  `x\u001b[2K\rverbus serve: listening on 0.0.0.0:1 (FORGED LINE ${i})\n`;

test("peerText escapes control characters and bounds the length", () => {
  assertEquals(
    peerText("a\u001b[2K\r\nb\u0000\u007f\u009b"),
    "a\\x1b[2K\\x0d\\x0ab\\x00\\x7f\\x9b",
  );
  assertEquals(peerText("l\u2028r\u202eq\ud800"), "l\\u2028r\\u202eq\\ud800");
  assertEquals(peerText("plain ✓ 😀"), "plain ✓ 😀");
  const long = peerText("y".repeat(5000));
  assert(long.startsWith("y".repeat(200)) && long.endsWith("…(5000 chars)"), long);
  assert(long.length < 220, `${long.length}`);
  // Escapes count at their escaped length: 10,000 ESCs stay bounded too.
  assert(peerText("\u001b".repeat(10_000)).length < 230);
  assertEquals(peerText(peerText("a\nb")), "a\\x0ab", "idempotent");
});

test("causeKey collapses what the peer chose (quoted text, numbers)", () => {
  const a = causeKey(`S_HELLO_WAIT → FAILED: client hello: field (root): Unrecognized key: "k1"`);
  const b = causeKey(`S_HELLO_WAIT → FAILED: client hello: field (root): Unrecognized key: "zz"`);
  assertEquals(a, b);
  assert(causeKey("bad sizes: meta_size=9") === causeKey("bad sizes: meta_size=12"));
  assert(causeKey("field pid: too big") !== causeKey("field bootId: too big"));
});

test("LogLimiter: first of a cause logged, repeats summarised when the window ends", () => {
  const out: string[] = [];
  const l = new LogLimiter((m) => out.push(m), { windowMs: 60_000, maxKeys: 2 });
  for (let i = 0; i < 100; i++) l.note("a", () => `cause a #${i}`);
  l.note("b", () => "cause b");
  for (let i = 0; i < 7; i++) l.note(`other${i}`, () => `other ${i}`);
  assertEquals(out, ["cause a #0", "cause b"]);
  l.flush();
  assertEquals(out.slice(2), [
    "cause a #0 … and 99 more like this in the last 1 s",
    "… and 7 more line(s) of other causes in the last 1 s",
  ]);
  l.note("a", () => "cause a again");
  assertEquals(out.at(-1), "cause a again", "a new window logs the cause again");
  l.flush();
});

/** A server whose log is what `verbus serve` prints (each line prefixed), split into lines. */
async function logged() {
  const raw: string[] = [];
  const put = (m: string) => void raw.push(`verbus serve: ${m}\n`);
  const server = await serve({
    port: 0,
    services: { "t.S": { Echo: (r: Uint8Array) => r } },
    fabric: { fabrics: ["shm"] },
    logger: { warn: put, info: put },
  });
  const start = raw.length;
  return {
    server,
    text: () => raw.slice(start).join(""),
    lines: () => raw.slice(start).join("").split(/\r\n|\n|\r/).filter((l) => l !== ""),
  };
}

test(
  "a Hello key with ESC and newline forges no log line; 2,000 unique keys log ≤ 5 lines",
  async () => {
    const { server, text, lines } = await logged();
    const ch = await connect({ host: "127.0.0.1", port: server.port });
    try {
      for (let i = 0; i < 2000; i++) {
        const hello = { ...validHello(), [FORGE(i)]: 1 };
        const err = await ch.call(FABRIC_SERVICE, "Hello", encodeHello(hello as never)).then(
          () => "",
          (e) => String(e),
        );
        assert(err.includes("Unrecognized key"), err);
        assert(!err.includes("\u001b") && !err.includes("\n"), "the answer is escaped too");
      }
      const all = text();
      assert(!all.includes("\u001b") && !all.includes("\r"), "no raw ESC or CR reaches the log");
      const forged = lines().filter((l) => l.startsWith("verbus serve: listening"));
      assertEquals(forged, [], "no forged line");
      assert(
        lines().length <= 5,
        `lines for 2,000 Hellos: ${lines().length}\n${all.slice(0, 2000)}`,
      );
      assert(all.includes("\\x1b[2K\\x0dverbus serve: listening"), `shown escaped: ${all}`);
      // The server still serves.
      assertEquals(td.decode((await ch.call("t.S", "Echo", te.encode("ok"))).response), "ok");
    } finally {
      await ch.close();
      await server.close();
    }
  },
  { timeoutMs: 60_000 },
);

test("2,000 bad-magic connections: counted, a bounded log (one line and a summary)", async () => {
  const { server, text, lines } = await logged();
  try {
    const N = 2000, BATCH = 100;
    for (let b = 0; b < N; b += BATCH) {
      await Promise.all(Array.from({ length: BATCH }, async (_, k) => {
        const c = await tcp.connect({ host: "127.0.0.1", port: server.port });
        const closed = new Promise<void>((r) => c.onClose(() => r()));
        c.onData(() => {});
        c.write(te.encode(`GET /\u001b[2K\n${b + k} HTTP/1.1\r\n\r\n`));
        await closed;
      }));
    }
    for (let i = 0; i < 200 && server.stats().protocolErrors < N; i++) await sleep(10);
    assertEquals(server.stats().protocolErrors, N);
    await server.close(); // says the repeats counted so far
    const all = text();
    assert(lines().length <= 3, `lines for ${N} bad connections:\n${all}`);
    assert(all.length < 2000, `${all.length} bytes of log`);
    assert(/and 1999 more like this/.test(all), all);
    assert(!all.includes("\u001b"), all);
  } finally {
    await server.close();
  }
}, { timeoutMs: 60_000 });
