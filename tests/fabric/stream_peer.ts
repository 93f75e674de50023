/**
 * A stream peer on the fabric the run selects (VERBUS_TEST_FABRIC), in its own process, for
 * tests that kill one side mid-stream. `server`: serves `S.M`, which accepts a stream and writes
 * "tick N" to it until it ends; prints `listening on PORT`. `client PORT`: opens a stream to
 * `S.M` at PORT through a client with a fabric session and writes to it until it ends; prints
 * `streaming on PORT over FABRIC` once the stream is open.
 * @module
 */
import process from "node:process";
import type { Server } from "../../rpc/server.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";
import { client, startServer } from "./util.ts";

const te = new TextEncoder();

async function pump(s: Stream): Promise<void> {
  for (let i = 0;; i++) await s.write(te.encode(`tick ${i}`));
}

const [mode, port] = process.argv.slice(2);
if (mode === "server") {
  const { server } = await startServer({}, {
    S: {
      M: (_req, ctx) => {
        void pump(acceptStream(ctx, { maxBufSize: 4096 })).catch(() => {});
        return new Uint8Array(0);
      },
    },
  });
  console.log(`listening on ${server.port}`);
} else {
  const c = await client({ port: Number(port) } as Server);
  const { stream } = await openStream(c, "S", "M", new Uint8Array(0), {
    stream: { maxBufSize: 4096 },
  });
  console.log(`streaming on ${port} over ${stream.carrier}`);
  await pump(stream).catch(() => {});
}
