/**
 * The demo services behind the real TCP server (baidu_std), called through a Channel with the
 * DemoClient: every operation end to end, attachments, and refused requests arriving as EREQUEST.
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { serve } from "../../rpc/server/server.ts";
import { connect } from "../../rpc/tcp/channel.ts";
import { EREQUEST, RpcError } from "../../rpc/errors.ts";
import {
  DemoClient,
  demoService,
  syntheticProfile,
  verifyLargeObject,
} from "../../examples/demo/mod.ts";
import { tempDir } from "./util.ts";

const te = new TextEncoder();

test("every demo operation works over TCP through a Channel", async () => {
  const d = tempDir();
  const server = await serve({ port: 0, services: demoService({ imageDir: d.path }) });
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const client = new DemoClient((s, m, b, o) => ch.call(s, m, b, o), { timeoutMs: 5000 });
    assert((await client.ping()).serverTimeUs > 0n, "ping");
    assertEquals(await client.echo(te.encode("over tcp")), te.encode("over tcp"));
    const r = await ch.call("verbus.Demo", "Echo", te.encode("p"), {
      attachment: te.encode("attached"),
    });
    assertEquals(r.attachment, te.encode("attached"), "attachment echoed");
    await client.put("k", te.encode("v"));
    assertEquals(await client.get("k"), te.encode("v"));
    assertEquals(await client.mget(["k", "none"]), [te.encode("v"), undefined]);
    assertEquals(await client.profile(31n), syntheticProfile(31n));
    const value = new Uint8Array(300_000).fill(0x5a);
    assertEquals(await client.bigPut("bulk", value), { replaced: false, length: value.length });
    assertEquals(await client.largeGet("bulk"), value);
    const big = await client.largeGet("big:1m");
    assertEquals(verifyLargeObject(1 << 20, big), -1, "big:1m verified by the client");
    const img = new Uint8Array(70_000).map((_, i) => (i * 7) & 0xff);
    assertEquals((await client.imagePut("tcp.png", img)).chunks, 3);
    assertEquals(new Uint8Array(readFileSync(join(d.path, "tcp.png"))), img);
    assertEquals(await client.brpcEcho("brpc over verbus"), "brpc over verbus");
    const e = await assertRejects(() => client.largeGet("big:3x"), RpcError, "big:3x");
    assertEquals(e.errorCode, EREQUEST);
    const missing = await assertRejects(
      () => ch.call("example.EchoService", "Echo", new Uint8Array(0)),
      RpcError,
      "required field",
    );
    assertEquals(missing.errorCode, EREQUEST);
  } finally {
    await ch.close();
    await server.close();
    d.remove();
  }
});
