/**
 * The Connect transport over many servers: `createVerbusTransport({ target: "list://…", lb })`
 * gives a generated client whose calls the cluster client spreads (rr: evenly), each server on
 * its own shm session; a dead server in the list is skipped by the retry; the cluster options
 * reach the cluster (maxRetry 0: no retry); a method whose proto says it is idempotent gets a
 * backup request when its server stalls, another method does not; `target: "HOST:PORT"` is the
 * same one-server transport as host and port; bad targets and options are named at once.
 */
import { create, createFileRegistry, type DescService } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { VerbusError } from "../../errors.ts";
import {
  createVerbusTransport,
  type VerbusClusterTransportOptions,
  type VerbusTransport,
  type VerbusTransportOptions,
} from "../../rpc/connect/transport.ts";
import type { ClusterClient } from "../../rpc/cluster/cluster_client.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { GreeterService } from "../../examples/greeter/gen/greeter/v1/greeter_pb.ts";
import { SMALL_REGION } from "../fabric/util.ts";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";

/**
 * `test.idem.Lookup` with `Find(Key) returns (Key)` declared NO_SIDE_EFFECTS (may run twice)
 * and `Take(Key) returns (Key)` with no idempotency level, built as protoc would describe them.
 */
function lookupService(): DescService {
  const file = create(FileDescriptorProtoSchema, {
    name: "idem.proto",
    package: "test.idem",
    syntax: "proto3",
    messageType: [{
      name: "Key",
      field: [{ name: "k", number: 1, type: 9, label: 1, jsonName: "k" }], // string k = 1
    }],
    service: [{
      name: "Lookup",
      method: [
        {
          name: "Find",
          inputType: ".test.idem.Key",
          outputType: ".test.idem.Key",
          options: { idempotencyLevel: 1 }, // NO_SIDE_EFFECTS
        },
        { name: "Take", inputType: ".test.idem.Key", outputType: ".test.idem.Key" },
      ],
    }],
  });
  return createFileRegistry(file, () => undefined).getService("test.idem.Lookup")!;
}

/** A server on 127.0.0.1 (shm offered) whose answers name its port; `stall` delays them. */
async function taggedServer(stall = { ms: 0 }): Promise<Server> {
  let port = 0;
  const wait = () => stall.ms > 0 ? new Promise((r) => setTimeout(r, stall.ms)) : undefined;
  const lookup = lookupService();
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: [
      [GreeterService, {
        greet: async (r: { name: string }) => {
          await wait();
          return { greeting: `${port}:${r.name}`, count: 0n };
        },
      }],
      [lookup, {
        find: async (r: { k: string }) => (await wait(), { k: `${port}:${r.k}` }),
        take: async (r: { k: string }) => (await wait(), { k: `${port}:${r.k}` }),
      }],
    ],
    fabric: { region: SMALL_REGION },
    logger: { warn: () => {}, info: () => {} },
  });
  port = server.port;
  return server;
}

const list = (ports: number[]) => `list://${ports.map((p) => `127.0.0.1:${p}`).join(",")}` as const;

/** A cluster transport over `ports`, closed (with the servers) after `fn`. */
async function withCluster(
  servers: Server[],
  ports: number[],
  options: Omit<VerbusClusterTransportOptions, "target">,
  fn: (t: VerbusTransport<ClusterClient>) => Promise<void>,
): Promise<void> {
  const t = createVerbusTransport({
    target: list(ports),
    server: { region: SMALL_REGION },
    log: () => {},
    ...options,
  });
  try {
    await fn(t);
  } finally {
    await t.close();
    await Promise.all(servers.map((s) => s.close()));
  }
}

test("a generated client over list:// of two servers: rr spreads the calls, each server on its own shm session", async () => {
  const servers = [await taggedServer(), await taggedServer()];
  const ports = servers.map((s) => s.port);
  await withCluster(servers, ports, { lb: "rr" }, async (t) => {
    const greeter = createClient(GreeterService, t);
    const by: Record<string, number> = {};
    for (let i = 0; i < 20; i++) {
      const { greeting } = await greeter.greet({ name: `n${i}` });
      const [port, name] = greeting.split(":");
      assertEquals(name, `n${i}`);
      by[port] = (by[port] ?? 0) + 1;
    }
    assertEquals(by, { [ports[0]]: 10, [ports[1]]: 10 }, "rr: even");
    // 40 at once: all answered, still even.
    const many = await Promise.all(
      Array.from({ length: 40 }, (_, i) => greeter.greet({ name: `m${i}` })),
    );
    many.forEach((r, i) => assert(r.greeting.endsWith(`:m${i}`), r.greeting));
    const c = await t.client();
    assertEquals(c.fabric, "shm");
    assertEquals(c.stats().answered, {
      [`127.0.0.1:${ports[0]}`]: 30,
      [`127.0.0.1:${ports[1]}`]: 30,
    });
    assertEquals(servers.map((s) => s.fabric!.sessions.size), [1, 1], "one shm session per server");
    assertEquals(t.target, list(ports));
    // Interceptors see the target in the request's URL.
    const urls: string[] = [];
    const seen = createVerbusTransport({
      target: list(ports),
      log: () => {},
      interceptors: [(next) => (req) => (urls.push(req.url), next(req))],
    });
    try {
      await createClient(GreeterService, seen).greet({ name: "u" });
      assertEquals(urls, [`verbus://${list(ports)}/greeter.v1.GreeterService/Greet`]);
    } finally {
      await seen.close();
    }
  });
});

test("over list://: a dead server is retried elsewhere; with maxRetry 0 its calls are Unavailable", async () => {
  const live = await taggedServer();
  const dead = await taggedServer();
  const deadPort = dead.port;
  await dead.close();
  await withCluster([live], [deadPort, live.port], { lb: "rr" }, async (t) => {
    const greeter = createClient(GreeterService, t);
    for (let i = 0; i < 6; i++) {
      const { greeting } = await greeter.greet({ name: "x" });
      assertEquals(greeting, `${live.port}:x`, "every call answered by the live server");
    }
    assert((await t.client()).stats().retries >= 1, "the dead server's turn was retried");
  });
  const live2 = await taggedServer();
  await withCluster([live2], [deadPort, live2.port], { lb: "rr", maxRetry: 0 }, async (t) => {
    const greeter = createClient(GreeterService, t);
    const outcomes = await Promise.allSettled([1, 2].map(() => greeter.greet({ name: "y" })));
    const failed = outcomes.filter((o) => o.status === "rejected") as PromiseRejectedResult[];
    assertEquals(failed.length, 1, "the call that met the dead server is not retried");
    assert(failed[0].reason instanceof ConnectError, String(failed[0].reason));
    assertEquals(Code[(failed[0].reason as ConnectError).code], "Unavailable");
  });
});

test("over list://: no server in rotation is Unavailable (UNAVAILABLE), naming the cluster", async () => {
  const dead = await taggedServer();
  const deadPort = dead.port;
  await dead.close();
  await withCluster([], [deadPort], { lb: "rr", maxRetry: 0 }, async (t) => {
    const greeter = createClient(GreeterService, t);
    // The first call meets the refused connection; the server is then out of rotation.
    await assertRejects(() => greeter.greet({ name: "a" }), ConnectError);
    const e = await greeter.greet({ name: "b" }).then(() => null, (e: unknown) => e);
    assert(e instanceof ConnectError, String(e));
    assertEquals(Code[e.code], "Unavailable", e.message);
    assert(e.cause instanceof VerbusError && e.cause.code === "UNAVAILABLE", String(e.cause));
    assert(e.message.includes("no server of list://"), e.message);
  });
});

test("backupRequestMs over a Connect client: only a method declared idempotent gets a backup", async () => {
  const stall = { ms: 0 };
  const slow = await taggedServer(stall);
  const fast = await taggedServer();
  await withCluster(
    [slow, fast],
    [slow.port, fast.port],
    { lb: "pick_first", backupRequestMs: 40 },
    async (t) => {
      // The descriptor is built at run time, so its client is typed here by hand.
      type Key = { k: string };
      const lookup = createClient(lookupService(), t) as unknown as {
        find(r: Key): Promise<Key>;
        take(r: Key): Promise<Key>;
      };
      // Connections made first, so that timing is of the calls only.
      assertEquals((await lookup.find({ k: "w" })).k, `${slow.port}:w`);
      stall.ms = 600;
      let t0 = performance.now();
      const found = await lookup.find({ k: "a" });
      const backedUp = performance.now() - t0;
      assertEquals(found.k, `${fast.port}:a`, "the backup on the other server won");
      assert(backedUp < 400, `answered after ${backedUp.toFixed(0)} ms`);
      t0 = performance.now();
      const taken = await lookup.take({ k: "b" });
      const waited = performance.now() - t0;
      assertEquals(taken.k, `${slow.port}:b`, "no backup: the stalled server answered");
      assert(waited >= 550, `answered after ${waited.toFixed(0)} ms`);
      assertEquals((await t.client()).stats().backups, 1);
    },
  );
});

test("target HOST:PORT is the one-server transport (shm), as host and port are", async () => {
  const server = await taggedServer();
  const t = createVerbusTransport({ target: `127.0.0.1:${server.port}`, region: SMALL_REGION });
  try {
    assertEquals([t.host, t.port, t.target], [
      "127.0.0.1",
      server.port,
      `127.0.0.1:${server.port}`,
    ]);
    const { greeting } = await createClient(GreeterService, t).greet({ name: "one" });
    assertEquals(greeting, `${server.port}:one`);
    const c = await t.client();
    assertEquals([c.fabric, c.handshake.state], ["shm", "ESTABLISHED"]);
  } finally {
    await t.close();
    await server.close();
  }
});

test("createVerbusTransport names a bad target or option of the target's kind at once", async () => {
  const cases: [unknown, string][] = [
    [{ target: "nohost" }, 'field target: "nohost" is none of HOST:PORT'],
    [{ target: "127.0.0.1:1", host: "h" }, "give target or host and port, not both"],
    [{ port: 1 }, "field host"],
    [{ host: "h" }, "field port"],
    [{ target: "list://127.0.0.1:1", maxRetry: -1 }, "field maxRetry"],
    [{ target: "list://127.0.0.1:1", backupRequestMs: 0 }, "field backupRequestMs"],
    // A cluster's per-server options go under `server`: at the top they are not the cluster's.
    [{ target: "list://127.0.0.1:1", fabric: "tcp" }, "fabric"],
    [{ target: "127.0.0.1:1", lb: "rr" }, "lb"],
    [{ target: "agent:a1", lb: "rr" }, "lb"],
    [{ target: "list://127.0.0.1:1", interceptors: [1] }, "field interceptors.0"],
  ];
  for (const [options, text] of cases) {
    const e = assertThrows(
      () => createVerbusTransport(options as VerbusTransportOptions),
      VerbusError,
      text,
    );
    assertEquals(e.code, "INVALID_OPTIONS");
  }
  // The balancer's name is checked when the cluster is made: the first call says why.
  const t = createVerbusTransport({ target: "list://127.0.0.1:1", lb: "fastest", log: () => {} });
  try {
    const e = await assertRejects(
      () => createClient(GreeterService, t).greet({ name: "z" }),
      ConnectError,
    );
    assert(e.rawMessage.includes("fastest"), e.rawMessage);
  } finally {
    await t.close();
  }
});
