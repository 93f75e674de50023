/**
 * A peer killed mid-stream on the fabric the run selects (a process of the other runtime,
 * SIGKILLed): the surviving side's stream, carried by the fabric session, ends with kind
 * "connection" naming the session's end; reads and writes fail at once; nothing stays open; the
 * survivor goes on (the server takes a new client's stream on a new session).
 */
import type { Stream } from "../../rpc/stream/stream.ts";
import { acceptStream } from "../../rpc/stream/accept.ts";
import { openStream } from "../../rpc/stream/open.ts";
import type { Server } from "../../rpc/server/server.ts";
import { StreamError } from "../../rpc/stream/stream_error.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { otherRuntime, spawnScript } from "../util/proc.ts";
import { client, startServer, until } from "./util.ts";

const SCRIPT = "tests/stream/stream_peer.ts"; // with --fabric: on the fabric this run selects
const td = new TextDecoder();

test(
  "the server process is killed mid-stream: the client's fabric stream fails with kind connection",
  async () => {
    const child = await spawnScript(otherRuntime(), SCRIPT, {
      args: ["server", "--fabric"],
      timeoutMs: 120_000,
    });
    try {
      const c = await client({ port: child.port } as Server);
      try {
        const { stream } = await openStream(c, "S", "M", new Uint8Array(0));
        assertEquals(stream.carrier, c.fabric);
        assert(c.fabric !== "tcp", "no fabric session");
        for (let i = 0; i < 10; i++) assertEquals(td.decode((await stream.read())!), `tick ${i}`);
        await child.kill("SIGKILL");
        const e = await assertRejects(async () => {
          for (;;) if ((await stream.read()) === undefined) return;
        }, StreamError);
        assertEquals(e.kind, "connection");
        assert(/session ended/.test(e.message), e.message);
        await assertRejects(() => stream.write(new Uint8Array(1)), StreamError);
        assertEquals(c._fabricStreams()?.table.size ?? 0, 0);
      } finally {
        await c.close();
      }
    } finally {
      await child.kill("SIGKILL");
    }
  },
  { timeoutMs: 240_000 },
);

test(
  "the client process is killed mid-stream: the server's fabric stream ends, the server serves on",
  async () => {
    const streams: Stream[] = [];
    const { server } = await startServer({}, {
      S: { M: (_r, ctx) => (streams.push(acceptStream(ctx)), new Uint8Array(0)) },
    });
    try {
      const child = await spawnScript(otherRuntime(), SCRIPT, {
        args: ["client", String(server.port), "--fabric"],
        ready: /streaming on \d+ over /,
        timeoutMs: 120_000,
      });
      try {
        assert(!/over tcp/.test(child.output()), child.output());
        assert((await streams[0].read()) !== undefined);
        assertEquals(streams[0].carrier, [...server.fabric!.sessions][0].streams.fabric);
        await child.kill("SIGKILL");
        const end = await streams[0].ended;
        assertEquals(end?.kind, "connection");
        await assertRejects(() => streams[0].write(new Uint8Array(1)), StreamError);
        await until(() => server.fabric!.sessions.size === 0, 10_000, "the session to end");
      } finally {
        await child.kill("SIGKILL");
      }
      // A new client gets a new stream on a new session.
      const c = await client(server);
      try {
        const { stream } = await openStream(c, "S", "M", new Uint8Array(0));
        assertEquals(stream.carrier, c.fabric);
        await streams[1].write(new TextEncoder().encode("again"));
        assertEquals(td.decode((await stream.read())!), "again");
      } finally {
        await c.close();
      }
    } finally {
      await server.close();
    }
  },
  { timeoutMs: 240_000 },
);
