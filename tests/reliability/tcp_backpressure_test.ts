/**
 * A peer that pipelines requests for large answers and never reads them (issue 12, fault 1): the
 * server stops taking its requests once its output queue passes the high-water mark, so its
 * memory stays bounded while every other client is answered, and the memory is released when the
 * peer leaves; a peer that never reads is closed after `stallTimeoutMs`. On main this server grew
 * by ~40 × 16 MiB (answers queued without limit) and kept the peer.
 */
import { connect } from "../../rpc/tcp/channel.ts";
import { serve } from "../../rpc/server/server.ts";
import { encodeFrame } from "../../rpc/protocol/frame.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { connectMute, sleep, startFixture } from "./tcp_peers.ts";

const MiB = 1024 * 1024;
const te = new TextEncoder();
const td = new TextDecoder();

function bigRequest(id: number, size: number): Uint8Array {
  const req = new Uint8Array(4);
  new DataView(req.buffer).setUint32(0, size, true);
  return encodeFrame(
    { request: { serviceName: "t.Rel", methodName: "Big" }, correlationId: id },
    req,
  );
}

test(
  "a peer that never reads 40 answers of 16 MiB: RSS bounded, others served, memory back after",
  async () => {
    const fx = await startFixture(); // default limits: high-water mark 8 MiB
    const good = await connect({ host: "127.0.0.1", port: fx.port });
    try {
      const gc = () => good.call("t.Rel", "Gc", new Uint8Array(0));
      const stats = async () =>
        JSON.parse(td.decode((await good.call("t.Rel", "Stats", new Uint8Array(0))).response));
      // Warm up every path once (a 16 MiB answer the good client reads), then the baseline.
      assertEquals(
        (await good.call("t.Rel", "Big", bigRequest(0, 16 * MiB).subarray(-4))).response.length,
        16 * MiB,
      );
      await gc();
      await sleep(200);
      await gc();
      const baseline = fx.rss();

      const mute = await connectMute(fx.port);
      const frames = Array.from({ length: 40 }, (_, i) => bigRequest(i + 1, 16 * MiB));
      const all = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
      frames.reduce((off, f) => (all.set(f, off), off + f.length), 0);
      await mute.write(all); // ~2 KB of requests for 640 MiB of answers
      let peak = fx.rss();
      let blocked = 0;
      for (let i = 0; i < 30; i++) {
        await sleep(100);
        peak = Math.max(peak, fx.rss());
        // Everyone else is served meanwhile.
        const r = await good.call("t.Rel", "Echo", te.encode(`still here ${i}`), {
          timeoutMs: 5000,
        });
        assertEquals(td.decode(r.response), `still here ${i}`);
        if (i % 10 === 9) blocked = Math.max(blocked, (await stats()).blockedConnections);
      }
      const grew = peak - baseline;
      assert(
        grew < 160 * MiB,
        `server RSS grew by ${(grew / MiB).toFixed(0)} MiB for a peer that does not read ` +
          `(baseline ${(baseline / MiB).toFixed(0)} MiB); the output queue must stop it`,
      );
      assertEquals(blocked, 1, "the mute connection is reported as blocked");

      mute.close();
      for (let i = 0; i < 500 && (await stats()).connections > 1; i++) await sleep(50);
      assertEquals((await stats()).connections, 1, "the mute connection is gone");
      let after = Infinity;
      for (let i = 0; i < 20 && after - baseline >= 48 * MiB; i++) {
        await gc();
        await sleep(100);
        after = fx.rss();
      }
      assert(
        after - baseline < 48 * MiB,
        `after the peer left the server holds ${((after - baseline) / MiB).toFixed(0)} MiB more ` +
          `than its baseline (peak was +${(grew / MiB).toFixed(0)} MiB)`,
      );
      assertEquals(td.decode((await good.call("t.Rel", "Echo", te.encode("end"))).response), "end");
    } finally {
      await good.close();
      await fx.stop();
    }
  },
  { timeoutMs: 60_000 },
);

test("a peer that does not read for stallTimeoutMs is closed and its queue dropped", async () => {
  const log: string[] = [];
  const server = await serve({
    port: 0,
    fabric: false,
    writeHighWaterMark: MiB,
    writeLowWaterMark: 256 * 1024,
    stallTimeoutMs: 300,
    logger: { warn: (m) => void log.push(m) },
    services: {
      "t.Rel": {
        Echo: (r: Uint8Array) => r,
        Big: (r: Uint8Array) =>
          new Uint8Array(new DataView(r.buffer, r.byteOffset).getUint32(0, true)),
      },
    },
  });
  const good = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const mute = await connectMute(server.port);
    for (let i = 0; i < 10; i++) await mute.write(bigRequest(i + 1, 4 * MiB));
    const t0 = performance.now();
    for (let i = 0; i < 500 && server.stats().stallTimeouts === 0; i++) {
      assertEquals(td.decode((await good.call("t.Rel", "Echo", te.encode("x"))).response), "x");
      await sleep(50);
    }
    const took = performance.now() - t0;
    assertEquals(server.stats().stallTimeouts, 1, "the mute peer was closed");
    assert(took >= 250, `closed after ${took.toFixed(0)} ms, not before the stall timeout`);
    for (let i = 0; i < 500 && server.stats().connections > 1; i++) await sleep(20);
    assertEquals(server.stats().connections, 1, "only the good client is left");
    assertEquals(log.length, 1, log.join("\n"));
    assert(log[0].includes("has not read its answers for 300 ms"), log[0]);
    mute.close();
  } finally {
    await good.close();
    await server.close();
  }
});
