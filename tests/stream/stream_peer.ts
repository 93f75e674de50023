/**
 * A stream peer in its own process, for tests that kill one side mid-stream.
 * `server`: serves `S.M`, which accepts a stream and writes "tick N" to it until it ends; prints
 * `listening on PORT`. `client PORT`: opens a stream to `S.M` at PORT and writes to it until it
 * ends; prints `streaming on PORT over CARRIER` once the stream is open. Over TCP, or with
 * `--fabric` on the fabric the run selects (VERBUS_TEST_FABRIC, tests/fabric/util.ts): the server
 * hosts fabric sessions and the client opens one.
 * @module
 */
import process from "node:process";
import { connect } from "../../rpc/tcp/channel.ts";
import { serve, type Server, type ServiceMap } from "../../rpc/server/server.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Stream } from "../../rpc/stream/stream.ts";

const te = new TextEncoder();

async function pump(s: Stream): Promise<void> {
  for (let i = 0;; i++) await s.write(te.encode(`tick ${i}`));
}

const services: ServiceMap = {
  S: {
    M: (_req, ctx) => {
      void pump(acceptStream(ctx, { maxBufSize: 4096 })).catch(() => {});
      return new Uint8Array(0);
    },
  },
};

const args = process.argv.slice(2);
const onFabric = args.includes("--fabric");
const [mode, port] = args.filter((a) => a !== "--fabric");
// the fabric helpers only when asked: they read VERBUS_TEST_FABRIC and the fabric registry
const fabric = onFabric ? await import("../fabric/util.ts") : undefined;
if (mode === "server") {
  const server = fabric
    ? (await fabric.startServer({}, services)).server
    : await serve({ port: 0, host: "127.0.0.1", fabric: false, services });
  console.log(`listening on ${server.port}`);
} else {
  const ch = fabric
    ? await fabric.client({ port: Number(port) } as Server)
    : await connect({ host: "127.0.0.1", port: Number(port) });
  const { stream } = await openStream(ch, "S", "M", new Uint8Array(0), {
    stream: { maxBufSize: 4096 },
  });
  console.log(`streaming on ${port} over ${stream.carrier}`);
  await pump(stream).catch(() => {});
}
