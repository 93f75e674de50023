/**
 * brpc streams over the fabric session (rpc/stream/stream_ring.ts), over the fabric the run
 * selects (shm, simulated URMA, verbs in the VM): a stream opened through a client with a live
 * session rides it (`stream.carrier`) with messages both ways and large messages across the
 * ring's wrap; a reader that stops reading stops the writer and bounds what is held; the demo's
 * Count reports the stream's fabric; a session that fails ends its streams with a clear error and
 * later streams go over TCP; hostile bytes in the stream ring (a tail past the ring, bytes that
 * are not stream frames, frames for unknown streams) end that session's streams only.
 */
import type { Handler } from "../../rpc/protocol/dispatch.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { CONTROL } from "../../rpc/region/layout.ts";
import { encodeStreamFrame, FRAME_DATA } from "../../rpc/protocol/stream_frame.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { client, FABRIC_LABEL, pattern, startServer, until } from "./util.ts";

const te = new TextEncoder();
const td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `S.Echo` echoes every message and closes when the client does; `S.Hold` reads nothing. */
function streamService(seen: Stream[]) {
  const echo: Handler = (req, ctx) => {
    const s = acceptStream(ctx);
    seen.push(s);
    (async () => {
      for await (const m of s) await s.write(m);
      s.close();
    })().catch(() => {});
    return te.encode(`accepted ${td.decode(req)}`);
  };
  const hold: Handler = (_req, ctx) => {
    seen.push(acceptStream(ctx, { maxUnreadBytes: 8 * 1024 * 1024 }));
    return new Uint8Array(0);
  };
  return { S: { Echo: echo, Hold: hold } };
}

test("a stream through a client on the fabric rides the session: messages both ways, large ones across the ring's wrap", async () => {
  const seen: Stream[] = [];
  const { server } = await startServer({}, streamService(seen));
  const c = await client(server);
  try {
    assertEquals(c.fabric, FABRIC_LABEL);
    const { stream, response } = await openStream(c, "S", "Echo", te.encode("hi"));
    assertEquals(td.decode(response), "accepted hi");
    assertEquals(stream.carrier, c.fabric);
    assertEquals(seen[0].carrier, c.fabric);
    for (let i = 0; i < 200; i++) await stream.write(te.encode(`m${i}`));
    for (let i = 0; i < 200; i++) assertEquals(td.decode((await stream.read())!), `m${i}`);
    // Larger than the 256 KiB ring: the frame crosses the wrap in pieces.
    for (const n of [100_000, 700_000, 3 * 1024 * 1024]) {
      const big = pattern(n, n & 0xff);
      await stream.write(big);
      const back = (await stream.read())!;
      assertEquals(back.length, n);
      assertEquals(back, big);
    }
    stream.close();
    assertEquals(await stream.ended, undefined);
    assertEquals(await seen[0].ended, undefined);
    // Nothing went over the TCP connection's streams.
    assertEquals((await c.channel._streams()).stats.opened, 0);
  } finally {
    await c.close();
    await server.close();
  }
});
