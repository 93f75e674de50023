/**
 * The server half of the fabric handshake, driven by hand over a raw channel: the offer a hello
 * prepares (here: the session's shm object) is released on every end that is not ESTABLISHED —
 * ACK 0, no ACK in time, the connection closed, a new hello, an ACK 1 without the client's proof,
 * the server closing — and each end is recorded with its reason.
 * @module
 */
import { existsSync as pathExists } from "node:fs";
import { liveSessionObjects, sessionObjectLive } from "../util/shm.ts";
import { pid } from "node:process";
import { type Channel, connect } from "../../rpc/tcp/channel.ts";
import { RpcError } from "../../rpc/errors.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import {
  ACK_OFF,
  ACK_ON,
  bootId,
  type ClientHello,
  decodeHello,
  encodeAck,
  encodeHello,
  FABRIC_SERVICE,
  HELLO_VERSION,
  serverHelloSchema,
} from "../../rpc/session/handshake/hello.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";

const SMALL = {
  slots: 8,
  slotSize: 4096,
  bulkSize: 1 << 16,
  objectSlabs: 2,
  objectSlabSize: 65536,
  stagingSize: 1 << 16,
};
const SKIP = pathExists("/proc/self/fd") ? false : "no /proc on this host";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(ackTimeoutMs = 10_000): Promise<Server> {
  return await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.S": { Echo: (req: Uint8Array) => req } },
    fabric: { fabrics: ["shm"], region: SMALL, ackTimeoutMs },
    logger: { warn: () => {}, info: () => {} },
  });
}

/** This process's session objects (sealed memfds, mapped or held open). */
const ownObjects = liveSessionObjects;

/** Sends a shm hello; returns the session object the server created for it (its name). */
async function hello(ch: Channel): Promise<string> {
  const before = ownObjects();
  const h: ClientHello = {
    version: HELLO_VERSION,
    bootId: bootId(),
    pid,
    fabrics: ["shm"],
    region: SMALL,
    params: { shm: {} },
  };
  const r = await ch.call(FABRIC_SERVICE, "Hello", encodeHello(h));
  const reply = decodeHello(serverHelloSchema, r.response, "server hello");
  assertEquals(reply.fabric, "shm", JSON.stringify(reply.decisions));
  const created = [...ownObjects()].filter((n) => !before.has(n));
  assertEquals(created.length, 1, `one new session object: ${created}`);
  return created[0];
}

async function until(what: string, cond: () => boolean, ms = 3000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await sleep(10);
  }
}

function lastOutcome(server: Server): { state: string; reason?: string } | undefined {
  return server.fabric!.history.at(-1);
}

test("ACK 0 releases the offer and records the decline", async () => {
  const server = await start();
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const path = await hello(ch);
    await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
    assert(!sessionObjectLive(path), "the shm object is gone after ACK 0");
    assertEquals(lastOutcome(server)?.state, "FALLBACK_TCP");
    assert(lastOutcome(server)?.reason?.includes("ACK 0"), lastOutcome(server)?.reason);
    assertEquals(server.fabric!.sessions.size, 0);
  } finally {
    await ch.close();
    await server.close();
  }
}, { skip: SKIP });

test("no ACK in time releases the offer", async () => {
  const server = await start(100);
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const path = await hello(ch);
    await until("the ACK timeout", () => !sessionObjectLive(path));
    assertEquals(lastOutcome(server)?.reason, "no ACK in time");
    await assertRejects(() => ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON)), RpcError);
  } finally {
    await ch.close();
    await server.close();
  }
}, { skip: SKIP });

test("a closed connection releases its pending offer", async () => {
  const server = await start();
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const path = await hello(ch);
    await ch.close();
    await until("the connection close", () => !sessionObjectLive(path));
    assertEquals(lastOutcome(server)?.reason, "connection closed");
  } finally {
    await server.close();
  }
}, { skip: SKIP });

test("a new hello on the connection releases the earlier offer", async () => {
  const server = await start();
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const first = await hello(ch);
    const second = await hello(ch);
    assert(first !== second, "each hello gets its own session object");
    assert(!sessionObjectLive(first), "the first offer is gone");
    assert(
      server.fabric!.history.some((h) => h.reason === "replaced by a new hello"),
      JSON.stringify(server.fabric!.history),
    );
    await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
    assert(!sessionObjectLive(second), "the second offer is gone after ACK 0");
  } finally {
    await ch.close();
    await server.close();
  }
}, { skip: SKIP });

test("ACK 1 without the client's proof is refused and releases the offer", async () => {
  const server = await start();
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const path = await hello(ch); // the client never maps the object: no proof in its half
    const e = await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON)),
      RpcError,
      "not confirmed",
    );
    assert(e.message.length > 0);
    assert(!sessionObjectLive(path), "the shm object is gone after a failed connect");
    assertEquals(lastOutcome(server)?.state, "FALLBACK_TCP");
    assertEquals(server.fabric!.sessions.size, 0);
  } finally {
    await ch.close();
    await server.close();
  }
}, { skip: SKIP });

test("closing the server releases a pending offer", async () => {
  const server = await start();
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const path = await hello(ch);
    await server.close();
    assert(!sessionObjectLive(path), "the shm object is gone after server.close()");
    assertEquals(lastOutcome(server)?.reason, "server closing");
  } finally {
    await ch.close();
  }
}, { skip: SKIP });

test("a hello that names an unknown fabric is refused naming the field", async () => {
  const server = await start();
  const ch = await connect({ host: "127.0.0.1", port: server.port });
  try {
    const bad = { version: HELLO_VERSION, bootId: "", pid, fabrics: ["tcp"], region: {} };
    await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Hello", new TextEncoder().encode(JSON.stringify(bad))),
      RpcError,
      "client hello: field fabrics.0",
    );
    assertEquals(lastOutcome(server)?.state, "FAILED");
  } finally {
    await ch.close();
    await server.close();
  }
});
