/**
 * The cluster client over `list://` (the naming services and balancers have tests of their own):
 * calls spread as the balancer promises and each result names its server and attempts; every
 * server rides its own fabric session (shm here), shared by every cluster client of the process;
 * a server that stops leaves the rotation without losing a call (retries where the call cannot
 * have run, or is marked idempotent), is probed and comes back; a backup request wins against a
 * server that stalls; the options and the URL are checked.
 * @module
 */
import { connect } from "../../rpc/client/client.ts";
import type { ClusterClient } from "../../rpc/cluster/cluster_client.ts";
import { ServerPool } from "../../rpc/cluster/server_pool.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { VerbusError } from "../../errors.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";

const te = new TextEncoder(), td = new TextDecoder();

/** A server whose Echo answers its own port; `stall` makes it wait that long first. */
async function echoServer(port = 0, stall = { ms: 0 }): Promise<Server> {
  let self = 0;
  const server = await serve({
    port,
    host: "127.0.0.1",
    services: {
      "t.C": {
        Who: async (req: Uint8Array) => {
          if (stall.ms > 0) await new Promise((r) => setTimeout(r, stall.ms));
          return te.encode(`${self}:${td.decode(req)}`);
        },
      },
    },
    fabric: { fabrics: ["shm"] },
    logger: { warn: () => {}, info: () => {} },
  });
  self = server.port;
  return server;
}

const list = (servers: Server[]) =>
  `list://${servers.map((s) => `127.0.0.1:${s.port}`).join(",")}` as const;

async function closeAll(c: ClusterClient | undefined, servers: Server[]): Promise<void> {
  await c?.close();
  await Promise.all(servers.map((s) => s.close()));
}

test("cluster rr: even spread over three servers, each over its own shm session, results name the server", async () => {
  const servers = await Promise.all([echoServer(), echoServer(), echoServer()]);
  let c: ClusterClient | undefined;
  try {
    c = await connect(list(servers), { lb: "rr", log: () => {} });
    const per: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const r = await c.call("t.C", "Who", te.encode(`${i}`));
      const [port, echo] = td.decode(r.response).split(":");
      assertEquals(echo, `${i}`);
      assertEquals(r.server, `127.0.0.1:${port}`, "the result names the server that answered");
      assertEquals(r.attempts, 1);
      per[r.server] = (per[r.server] ?? 0) + 1;
    }
    assertEquals(Object.values(per), [10, 10, 10], JSON.stringify(per));
    // Each server's calls ride the fast path on its own session (all on this host: shm).
    const r = await c.call("t.C", "Who", te.encode("x"));
    assertEquals([r.fabric, r.path], ["shm", "EAGER"]);
    assertEquals(c.stats().servers, 3);
  } finally {
    await closeAll(c, servers);
  }
});

test("cluster: two cluster clients naming the same servers share one client per server", async () => {
  const servers = await Promise.all([echoServer(), echoServer()]);
  const pool = ServerPool.forThread();
  const before = pool.size;
  let a: ClusterClient | undefined, b: ClusterClient | undefined;
  try {
    a = await connect(list(servers), { lb: "rr", log: () => {} });
    b = await connect(list(servers), { lb: "random", log: () => {} });
    for (let i = 0; i < 8; i++) {
      await a.call("t.C", "Who", te.encode("a"));
      await b.call("t.C", "Who", te.encode("b"));
    }
    assertEquals(pool.size - before, 2, "one shared client per server");
    assertEquals(servers.map((s) => s.fabric!.sessions.size), [1, 1], "one session per server");
    await a.close();
    assertEquals(pool.size - before, 2, "still held by the other cluster client");
    await b.close();
    assertEquals(pool.size - before, 0, "released with the last user");
  } finally {
    await a?.close();
    await b?.close();
    await Promise.all(servers.map((s) => s.close()));
  }
});

test(
  "cluster: a server that stops leaves the rotation, no call is lost, it is probed back",
  async () => {
    const servers = await Promise.all([echoServer(), echoServer(), echoServer()]);
    const gonePort = servers[1].port;
    let c: ClusterClient | undefined;
    const events: string[] = [];
    try {
      c = await connect(list(servers), {
        lb: "rr",
        healthCheckMs: 100,
        log: (l) => events.push(l),
      });
      for (let i = 0; i < 6; i++) await c.call("t.C", "Who", te.encode("warm"));
      await servers[1].close();
      // Calls keep coming, 8 in flight at a time: every one answered (idempotent: a call in
      // flight on the stopped server may be redone elsewhere).
      for (let round = 0; round < 10; round++) {
        const rs = await Promise.all(
          Array.from(
            { length: 8 },
            (_, i) => c!.call("t.C", "Who", te.encode(`${round}.${i}`), { idempotent: true }),
          ),
        );
        for (const r of rs) {
          assert(r.server !== `127.0.0.1:${gonePort}`, `answered by ${r.server}`);
        }
      }
      assertEquals(c.stats().inRotation, 2, "the stopped server left the rotation");
      assert(events.some((e) => e.includes(`127.0.0.1:${gonePort} is broken`)), events.join("\n"));
      // The same port serves again: the probe puts it back.
      servers[1] = await echoServer(gonePort);
      const end = performance.now() + 5000;
      while (c.stats().inRotation < 3 && performance.now() < end) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assertEquals(c.stats().inRotation, 3, `back in rotation: ${events.join("\n")}`);
      const seen = new Set<string>();
      for (let i = 0; i < 9; i++) seen.add((await c.call("t.C", "Who", te.encode("b"))).server);
      assert(seen.has(`127.0.0.1:${gonePort}`), "it takes calls again");
    } finally {
      await closeAll(c, servers);
    }
  },
  { timeoutMs: 60_000 },
);

test("cluster: a connection that cannot be made is retried on another server (attempts 2)", async () => {
  const live = await echoServer();
  const dead = await echoServer();
  const deadPort = dead.port;
  await dead.close();
  let c: ClusterClient | undefined;
  try {
    c = await connect(`list://127.0.0.1:${deadPort},127.0.0.1:${live.port}`, {
      lb: "pick_first",
      log: () => {},
    });
    const r = await c.call("t.C", "Who", te.encode("x"));
    assertEquals([r.server, r.attempts], [`127.0.0.1:${live.port}`, 2]);
    const again = await c.call("t.C", "Who", te.encode("y"));
    assertEquals([again.server, again.attempts], [`127.0.0.1:${live.port}`, 1], "broken: skipped");
  } finally {
    await closeAll(c, [live]);
  }
});

test("cluster: a backup request to another server wins against one that stalls", async () => {
  const stall = { ms: 0 };
  const slow = await echoServer(0, stall);
  const fast = await echoServer();
  let c: ClusterClient | undefined;
  try {
    c = await connect(`list://127.0.0.1:${slow.port},127.0.0.1:${fast.port}`, {
      lb: "pick_first",
      backupRequestMs: 50,
      log: () => {},
    });
    stall.ms = 2000;
    const t0 = performance.now();
    const r = await c.call("t.C", "Who", te.encode("x"), { idempotent: true });
    assertEquals([r.server, r.attempts], [`127.0.0.1:${fast.port}`, 2]);
    assert(performance.now() - t0 < 1500, "answered by the backup, not after the stall");
    assertEquals(c.stats().backups, 1);
    // Not idempotent: no copy is sent; the slow server answers.
    stall.ms = 100;
    const own = await c.call("t.C", "Who", te.encode("y"));
    assertEquals([own.server, own.attempts], [`127.0.0.1:${slow.port}`, 1]);
  } finally {
    stall.ms = 0;
    await closeAll(c, [slow, fast]);
  }
});

test("cluster: a deadline is never retried; the server's own answer is never retried", async () => {
  const stall = { ms: 0 };
  const a = await echoServer(0, stall), b = await echoServer(0, stall);
  let c: ClusterClient | undefined;
  try {
    c = await connect(list([a, b]), { lb: "rr", log: () => {} });
    stall.ms = 500;
    const e = await assertRejects(
      () => c!.call("t.C", "Who", te.encode("x"), { timeoutMs: 100, idempotent: true }),
      VerbusError,
    );
    assertEquals(e.code, "TIMEOUT");
    stall.ms = 0;
    const n = await assertRejects(() => c!.call("t.C", "Nope", te.encode("x")), VerbusError);
    assertEquals(n.code, "RPC_ERROR");
    assertEquals(c.stats().retries, 0);
  } finally {
    stall.ms = 0;
    await closeAll(c, [a, b]);
  }
});

test("cluster: bad options and URLs are named", async () => {
  const e1 = await assertRejects(() => connect("nosuch://x", {}), VerbusError);
  assert(/expected one of/.test(e1.message), e1.message);
  const e2 = await assertRejects(
    () => connect("list://127.0.0.1:1", { lb: "nosuch" }),
    VerbusError,
  );
  assert(/load balancer "nosuch"/.test(e2.message), e2.message);
  const e3 = await assertRejects(
    () => connect("list://127.0.0.1:1", { maxRetry: -1 } as never),
    VerbusError,
  );
  assert(/maxRetry/.test(e3.message), e3.message);
});

test(
  "cluster: brpc's recover policy (rr:min_working_instances hold_seconds) admits a share of calls while the cluster recovers",
  async () => {
    const servers = await Promise.all([echoServer(), echoServer()]);
    const port = servers[0].port;
    let c: ClusterClient | undefined;
    /** Makes `n` calls; how many were answered and how many the policy rejected. */
    const burst = async (n: number) => {
      let answered = 0, rejected = 0;
      for (let i = 0; i < n; i++) {
        try {
          await c!.call("t.C", "Who", te.encode("r"));
          answered++;
        } catch (e) {
          if (!(e instanceof VerbusError && e.code === "UNAVAILABLE")) throw e;
          if (e.context.rejected) rejected++;
        }
      }
      return { answered, rejected };
    };
    try {
      c = await connect(list(servers), {
        lb: "rr:min_working_instances=4 hold_seconds=1",
        healthCheckMs: 50,
        log: () => {},
      });
      assertEquals(await burst(10), { answered: 10, rejected: 0 }, "healthy: nothing rejected");
      await Promise.all(servers.map((s) => s.close()));
      // Both connections fail, then no server is usable: the cluster starts recovering.
      for (let i = 0; i < 4 && c.stats().inRotation > 0; i++) await burst(1).catch(() => {});
      const none = await assertRejects(() => c!.call("t.C", "Who", te.encode("x")), VerbusError);
      assertEquals(none.code, "UNAVAILABLE", none.message);
      const down = await burst(5);
      assertEquals(down, { answered: 0, rejected: 5 }, "0 usable: every call rejected");
      // One server back (of min_working_instances 4): about a quarter of the calls go ahead.
      servers[0] = await echoServer(port);
      const end = performance.now() + 10_000;
      while (c.stats().inRotation < 1 && performance.now() < end) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const share = await burst(200);
      assertEquals(share.answered + share.rejected, 200);
      assert(
        share.answered >= 20 && share.answered <= 100,
        `~1/4 admitted: ${JSON.stringify(share)}`,
      );
      assert(c.stats().rejected >= 5 + share.rejected, JSON.stringify(c.stats()));
      // The usable count held for hold_seconds: recovery ends, every call goes ahead.
      let run = 0;
      while (run < 20 && performance.now() < end + 10_000) {
        const b = await burst(1);
        run = b.answered === 1 ? run + 1 : 0;
        if (run === 0) await new Promise((r) => setTimeout(r, 50));
      }
      assertEquals(await burst(50), { answered: 50, rejected: 0 }, "recovered");
    } finally {
      await closeAll(c, servers);
    }
  },
  { timeoutMs: 60_000 },
);
