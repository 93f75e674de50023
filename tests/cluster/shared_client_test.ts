/**
 * One connection per server, shared by every kind of user: a cluster client over `list://`, a
 * direct `connect("HOST:PORT", { shared: true })` and a Connect transport with `shared: true`
 * naming the same server ride one TCP connection and one shm session (the pool holds one client;
 * the server sees one session). Closing the direct view gives its hold back only: the others go
 * on, the view's calls fail CLOSED, and the last user closes the connection. Without `shared`, a
 * direct client is its own (a second session), as before.
 * @module
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { VerbusError } from "../../errors.ts";
import { Client, connect } from "../../rpc/client/client.ts";
import type { ClusterClient } from "../../rpc/cluster/cluster_client.ts";
import { ServerPool } from "../../rpc/cluster/server_pool.ts";
import { createVerbusTransport } from "../../rpc/connect/transport.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import {
  GreeterService,
  GreetRequestSchema,
  GreetResponseSchema,
} from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";

const GREETER = "greeter.v1.GreeterService";

function startServer(): Promise<Server> {
  return serve({
    port: 0,
    host: "127.0.0.1",
    services: [[GreeterService, {
      greet: (r: { name: string }) => ({ greeting: r.name, count: 0n }),
    }]],
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
}

/** `GreetRequest{name}` as bytes, for the byte-level clients. */
const msg = (name: string) => toBinary(GreetRequestSchema, create(GreetRequestSchema, { name }));
/** The greeting of a `GreetResponse`. */
const greeting = (bytes: Uint8Array) => fromBinary(GreetResponseSchema, bytes).greeting;

test("shared: a cluster client, a direct shared client and a Connect transport ride one connection and one shm session", async () => {
  const server = await startServer();
  const address = `127.0.0.1:${server.port}`;
  const pool = ServerPool.forThread();
  const before = pool.size;
  let cluster: ClusterClient | undefined, direct: Client | undefined;
  const transport = createVerbusTransport({ target: address, shared: true });
  try {
    cluster = await connect(`list://${address}`, { log: () => {} });
    direct = await connect(address, { shared: true });
    assert(direct instanceof Client, "the view is a Client");
    const viaConnect = createClient(GreeterService, transport);
    for (let i = 0; i < 5; i++) {
      const a = await cluster.call(GREETER, "Greet", msg(`c${i}`));
      const b = await direct.call(GREETER, "Greet", msg(`d${i}`));
      const c = await viaConnect.greet({ name: `t${i}` });
      assertEquals([a.fabric, b.fabric], ["shm", "shm"]);
      assertEquals(greeting(b.response), `d${i}`);
      assertEquals(c.greeting, `t${i}`);
    }
    assertEquals(pool.size - before, 1, "one shared client for the three users");
    assertEquals(server.fabric!.sessions.size, 1, "one shm session at the server");
    assert((await transport.client()) === (await transport.client()));
    assertEquals(direct.stats().calls.EAGER, 15, "the shared client counts every user's calls");
    // The direct view lets go: the others go on over the same session; its calls are refused.
    await direct.close();
    await direct.close();
    const e = await assertRejects(() => direct!.call(GREETER, "Greet", msg("x")), VerbusError);
    assertEquals(e.code, "CLOSED");
    assertEquals((await cluster.call(GREETER, "Greet", msg("after"))).fabric, "shm");
    assertEquals((await viaConnect.greet({ name: "after" })).greeting, "after");
    assertEquals([pool.size - before, server.fabric!.sessions.size], [1, 1]);
    // The last users go: the connection closes.
    await cluster.close();
    await transport.close();
    assertEquals(pool.size - before, 0, "released with its last user");
  } finally {
    await direct?.close();
    await cluster?.close();
    await transport.close();
    await server.close();
  }
});

test("shared: without it a direct client has its own connection; other options are another key", async () => {
  const server = await startServer();
  const address = `127.0.0.1:${server.port}`;
  const clients: Client[] = [];
  try {
    clients.push(await connect(address, { shared: true }));
    clients.push(await connect(address, { shared: true }));
    clients.push(await connect(address)); // its own
    clients.push(await connect(address, { shared: true, fabric: "tcp" })); // another key: TCP
    for (const c of clients) await c.call(GREETER, "Greet", msg("x"));
    assertEquals(server.fabric!.sessions.size, 2, "one shared session and the unshared client's");
    assertEquals(clients.map((c) => c.fabric), ["shm", "shm", "shm", "tcp"]);
    const bad = await assertRejects(
      () => connect(address, { shared: true, timeoutMs: -1 }),
      VerbusError,
    );
    assertEquals(bad.code, "INVALID_OPTIONS");
  } finally {
    for (const c of clients) await c.close();
    await server.close();
  }
});
