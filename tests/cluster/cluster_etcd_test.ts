/**
 * The cluster client over a real etcd: servers register themselves (`serve({ register })` in
 * this process, `verbus serve --register` children of the other runtime) and a client follows
 * them with `connect("etcd://…/demo", { lb })`. Calls spread as each balancer promises (rr even,
 * wrr by the registration's tag, c_murmurhash stable per request code, across clients); a server
 * SIGKILLed under load at 32 in flight loses no call and no put is applied twice on the others,
 * which take over within the probe interval; a server registered later is used within one watch
 * round; the breaker isolates a server that fails half its calls; a backup request wins against a
 * server that stalls. Skipped, with the reason, where etcd is not installed.
 * @module
 */
import { connect } from "../../rpc/client/client.ts";
import type { ClusterCallResult, ClusterClient } from "../../rpc/cluster/cluster_client.ts";
import { ringPoints } from "../../rpc/cluster/lb_consistent_hashing.ts";
import { murmurHash32 } from "../../rpc/cluster/murmurhash3.ts";
import { encodePutRequest } from "../../examples/demo/codec.ts";
import { type Child, otherRuntime, spawnScript } from "../util/proc.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { ETCD_SKIP, withEtcd } from "./etcd.ts";
import { type FleetServer, fleetServer } from "./fixtures/cluster_fleet.ts";

const skip = ETCD_SKIP;
/** What `connect()` takes as a naming-service URL. */
type NamingUrl = `${string}://${string}`;
const te = new TextEncoder(), td = new TextDecoder();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `verbus serve --register URL` on the other runtime (shm offered, as by default). */
function serveChild(url: string, ttl = 10): Promise<Child> {
  return spawnScript(otherRuntime(), "cli/main.ts", {
    args: [
      "serve",
      "--port",
      "0",
      "--fabric",
      "shm",
      "--register",
      url,
      "--register-ttl",
      `${ttl}`,
    ],
  });
}

/** Waits until `cond` holds (polled every 10 ms); throws naming `what` after `ms`. */
async function until(cond: () => boolean, ms: number, what: string): Promise<number> {
  const t0 = performance.now();
  while (!cond()) {
    if (performance.now() - t0 > ms) throw new Error(`timed out after ${ms} ms: ${what}`);
    await sleep(10);
  }
  return performance.now() - t0;
}

/** Runs `n` calls made by `make(i)`, `window` at a time; resolves with each one's outcome. */
async function load<T>(
  n: number,
  window: number,
  make: (i: number) => Promise<T>,
): Promise<(T | Error)[]> {
  const out: (T | Error)[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: window }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await make(i).catch((e) => e as Error);
    }
  }));
  return out;
}

const count = (rs: readonly ClusterCallResult[]) => {
  const per: Record<string, number> = {};
  for (const r of rs) per[r.server] = (per[r.server] ?? 0) + 1;
  return per;
};
const put = (c: ClusterClient, key: string, o: { idempotent?: boolean } = {}) =>
  c.call("verbus.Demo", "KvPut", encodePutRequest(key, te.encode(key)), o);
const ok = <T>(rs: (T | Error)[]): T[] => {
  const bad = rs.filter((r) => r instanceof Error) as Error[];
  assertEquals(bad.length, 0, `failed calls: ${bad.slice(0, 3).map((e) => e.message).join(" | ")}`);
  return rs as T[];
};

async function closeAll(
  clients: (ClusterClient | undefined)[],
  fleet: FleetServer[],
  kids: Child[],
) {
  await Promise.all(clients.map((c) => c?.close()));
  await Promise.all(fleet.map((f) => f.server.close()));
  await Promise.all(kids.map((k) => k.kill()));
}

test(
  "cluster over etcd: three registered servers (one a verbus serve of the other runtime): rr even, c_murmurhash stable per code across clients",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("demo") as NamingUrl;
      const fleet: FleetServer[] = [], kids: Child[] = [];
      const clients: (ClusterClient | undefined)[] = [];
      try {
        fleet.push(await fleetServer(url), await fleetServer(url));
        kids.push(await serveChild(url));
        const addresses = [...fleet.map((f) => f.address), `127.0.0.1:${kids[0].port}`].sort();
        const rr = await connect(url, { lb: "rr", log: () => {} });
        clients.push(rr);
        await until(() => rr.stats().servers === 3, 5000, "the three registered servers");
        const rs = ok(await load(600, 32, (i) => put(rr, `rr/${i}`)));
        const per = count(rs);
        assertEquals(Object.keys(per).sort(), addresses);
        assertEquals(Object.values(per), [200, 200, 200], JSON.stringify(per));
        assert(rs.every((r) => r.attempts === 1), "no call needed a second attempt");
        // Same-host servers ride shm, the other runtime's too.
        assertEquals(new Set(rs.map((r) => r.fabric)), new Set(["shm"]));

        // c_murmurhash: a code always goes to one server, codes spread over the fleet, and a
        // second client (its own ring from the same registrations) agrees code by code.
        const h1 = await connect(url, { lb: "c_murmurhash", log: () => {} });
        const h2 = await connect(url, { lb: "c_murmurhash", log: () => {} });
        clients.push(h1, h2);
        await until(() => h1.stats().servers === 3 && h2.stats().servers === 3, 5000, "ring");
        // As brpc users do, the code is the key's MurmurHash32 (a position on the ring); the
        // server is the owner of the first of brpc's ring points at or after it.
        const ring = addresses.flatMap((a) =>
          ringPoints(a, 100, "murmurhash3").map((p) => ({ p, a }))
        )
          .sort((x, y) => x.p - y.p);
        const owner = (code: number) => (ring.find((x) => x.p >= code) ?? ring[0]).a;
        const route = new Map<number, string>();
        for (let k = 0; k < 48; k++) {
          const code = murmurHash32(`user-${k}`);
          const seen = new Set<string>();
          for (const c of [h1, h1, h2, h2, h1]) {
            seen.add(
              (await c.call("verbus.Demo", "Ping", new Uint8Array(0), {
                requestCode: code,
              })).server,
            );
          }
          assertEquals([...seen], [owner(code)], `user-${k} (code ${code})`);
          route.set(k, owner(code));
        }
        assertEquals(new Set(route.values()).size, 3, "48 codes spread over the three servers");
      } finally {
        await closeAll(clients, fleet, kids);
      }
    });
  },
  { skip, timeoutMs: 90_000 },
);

test("cluster over etcd: wrr sends each server its registration's tag as weight", async () => {
  await withEtcd(async (etcd) => {
    const url = etcd.url("demo") as NamingUrl;
    const fleet: FleetServer[] = [];
    let c: ClusterClient | undefined;
    try {
      for (const tag of ["1", "2", "3"]) fleet.push(await fleetServer(url, { tag }));
      c = await connect(url, { lb: "wrr", log: () => {} });
      await until(() => c!.stats().servers === 3, 5000, "the three registered servers");
      const per = count(ok(await load(600, 32, (i) => put(c!, `w/${i}`))));
      // brpc's stride walk gives each server exactly its share of every full turn (6 calls).
      assertEquals(fleet.map((f) => per[f.address]), [100, 200, 300], JSON.stringify(per));
      assertEquals(fleet.map((f) => f.kv.puts.size), [100, 200, 300]);
    } finally {
      await closeAll([c], fleet, []);
    }
  });
}, { skip, timeoutMs: 60_000 });

test(
  "cluster over etcd: a server SIGKILLed under load (32 in flight, idempotent puts): no call lost, no put applied twice, the others take over within the probe interval",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("demo") as NamingUrl;
      const fleet: FleetServer[] = [], kids: Child[] = [];
      let c: ClusterClient | undefined;
      const events: { at: number; line: string }[] = [];
      const healthCheckMs = 1000;
      try {
        fleet.push(await fleetServer(url), await fleetServer(url));
        const victim = await serveChild(url, 2);
        kids.push(victim);
        const gone = `127.0.0.1:${victim.port}`;
        c = await connect(url, {
          lb: "rr",
          healthCheckMs,
          log: (line) => events.push({ at: performance.now(), line }),
        });
        await until(() => c!.stats().servers === 3, 5000, "the three registered servers");
        let killedAt = 0, stop = false, n = 0;
        const answered: { key: string; at: number; r: ClusterCallResult }[] = [];
        const failed: Error[] = [];
        const worker = async () => {
          while (!stop) {
            const key = `k/${n++}`;
            try {
              answered.push({
                key,
                at: performance.now(),
                r: await put(c!, key, { idempotent: true }),
              });
            } catch (e) {
              failed.push(e as Error);
            }
          }
        };
        const workers = Array.from({ length: 32 }, worker);
        await until(
          () => answered.filter((a) => a.r.server === gone).length >= 200,
          20_000,
          "warm",
        );
        const killed = victim.kill("SIGKILL"); // the signal is sent before this returns
        killedAt = performance.now();
        await killed;
        // Until the lease has ended and etcd has named it gone, and a while more.
        await until(() => c!.stats().servers === 2, 10_000, "the victim's lease ended");
        await sleep(300);
        stop = true;
        await Promise.all(workers);

        assertEquals(failed.map((e) => e.message).slice(0, 3), [], `${failed.length} calls failed`);
        assertEquals(answered.length, n, "every call answered");
        // No put applied twice on the servers that survived (the victim's memory died with it).
        for (const f of fleet) {
          const twice = [...f.kv.puts].filter(([, k]) => k > 1);
          assertEquals(twice, [], `puts applied twice on ${f.address}`);
        }
        const both = [...fleet[0].kv.puts.keys()].filter((k) => fleet[1].kv.puts.has(k));
        assertEquals(both, [], "keys applied on both survivors");
        for (const a of answered) {
          if (a.r.server !== gone) {
            const f = fleet.find((f) => f.address === a.r.server)!;
            assertEquals(f.kv.puts.get(a.key), 1, `${a.key} answered by ${a.r.server}`);
          }
        }
        // The others took over: the victim left the rotation within the probe interval, and
        // nothing after that was answered by it.
        const broken = events.find((e) => e.line.includes(`${gone} is broken`));
        assert(broken, `the victim never left the rotation; events: ${events.map((e) => e.line)}`);
        const takeover = broken.at - killedAt;
        const last = Math.max(...answered.filter((a) => a.r.server === gone).map((a) => a.at));
        assert(last <= broken.at, "no answer from the victim after it left the rotation");
        assert(takeover < healthCheckMs, `taken over ${takeover.toFixed(0)} ms after the kill`);
        const after = answered.filter((a) => a.at > killedAt);
        assert(after.length > 100, `${after.length} calls after the kill`);
        const retried = answered.filter((a) => a.r.attempts > 1).length;
        console.log(
          `  ${answered.length} puts, ${after.length} after the kill; victim out of rotation ` +
            `${takeover.toFixed(0)} ms after SIGKILL; ${retried} calls answered on a retry`,
        );
      } finally {
        await closeAll([c], fleet, kids);
      }
    });
  },
  { skip, timeoutMs: 90_000 },
);

test("cluster over etcd: a server registered later is used within one watch round", async () => {
  await withEtcd(async (etcd) => {
    const url = etcd.url("demo") as NamingUrl;
    const fleet: FleetServer[] = [];
    let c: ClusterClient | undefined;
    try {
      fleet.push(await fleetServer(url), await fleetServer(url));
      c = await connect(url, { lb: "rr", log: () => {} });
      await until(() => c!.stats().servers === 2, 5000, "the two registered servers");
      const t0 = performance.now();
      const late = await fleetServer(url);
      fleet.push(late);
      const registered = performance.now();
      let used = 0;
      for (let i = 0; used === 0; i++) {
        const r = await put(c, `late/${i}`);
        if (r.server === late.address) used = performance.now();
        else if (performance.now() - registered > 3000) throw new Error("not used after 3 s");
        else await sleep(2);
      }
      // etcd pushes the new key on the open watch: no poll interval to wait for.
      const ms = used - registered;
      console.log(
        `  registered in ${(registered - t0).toFixed(0)} ms, first call ${ms.toFixed(0)} ms later`,
      );
      assert(ms < 2000, `used ${ms} ms after its registration`);
    } finally {
      await closeAll([c], fleet, []);
    }
  });
}, { skip, timeoutMs: 60_000 });

test("cluster over etcd: the breaker isolates a server that fails half its calls", async () => {
  await withEtcd(async (etcd) => {
    const url = etcd.url("demo") as NamingUrl;
    const fleet: FleetServer[] = [];
    let c: ClusterClient | undefined;
    const events: string[] = [];
    try {
      fleet.push(
        await fleetServer(url),
        await fleetServer(url),
        await fleetServer(url, { flaky: true }),
      );
      const bad = fleet[2].address;
      c = await connect(url, { lb: "rr", log: (l) => events.push(l) });
      await until(() => c!.stats().servers === 3, 5000, "the three registered servers");
      // Only the flaky server ever fails a call: a failure is one of its answers.
      const who = (r: ClusterCallResult | Error) => r instanceof Error ? bad : r.server;
      // Before the breaker has seen enough: rr gives it its third of the calls.
      const first = await load(600, 32, () => c!.call("t.C", "Flaky", new Uint8Array(0)));
      const firstBad = first.filter((r) => who(r) === bad).length;
      assertEquals(firstBad, 200, "a third of the first calls");
      const rest = await load(6000, 32, () => c!.call("t.C", "Flaky", new Uint8Array(0)));
      const failures = rest.filter((r) => r instanceof Error).length;
      const restBad = rest.filter((r) => who(r) === bad).length;
      assert(c.stats().isolated >= 1, `isolated ${c.stats().isolated} times; ${events.join("\n")}`);
      assert(events.every((e) => !e.includes("isolated") || e.includes(bad)), events.join("\n"));
      assert(events.some((e) => e.includes(`${bad} is isolated`)), events.join("\n"));
      // Every failure came from the flaky server (the others never fail); its share fell.
      const share = restBad / rest.length;
      console.log(
        `  flaky server: 1/3 of the first 600 calls, ${(share * 100).toFixed(1)} % of the next ` +
          `6000 (${failures} failed); isolated ${c.stats().isolated} times`,
      );
      assert(share < 0.25, `the flaky server still took ${(share * 100).toFixed(1)} %`);
    } finally {
      await closeAll([c], fleet, []);
    }
  });
}, { skip, timeoutMs: 90_000 });

test("cluster over etcd: a backup request wins against a server that stalls", async () => {
  await withEtcd(async (etcd) => {
    const url = etcd.url("demo") as NamingUrl;
    const fleet: FleetServer[] = [];
    let c: ClusterClient | undefined;
    try {
      fleet.push(await fleetServer(url), await fleetServer(url), await fleetServer(url));
      const slow = fleet[1];
      c = await connect(url, { lb: "rr", backupRequestMs: 30, log: () => {} });
      await until(() => c!.stats().servers === 3, 5000, "the three registered servers");
      slow.stall.ms = 3000;
      const t0 = performance.now();
      const rs = ok(
        await load(30, 6, async () => {
          const s = performance.now();
          const r = await c!.call("t.C", "Who", new Uint8Array(0), { idempotent: true });
          return { r, ms: performance.now() - s };
        }),
      );
      const wall = performance.now() - t0;
      for (const { r, ms } of rs) {
        assert(r.server !== slow.address, `answered by the stalled server after ${ms} ms`);
        assertEquals(td.decode(r.response), r.server.split(":")[1]);
        assert(ms < 1500, `a call took ${ms.toFixed(0)} ms`);
      }
      const backups = rs.filter(({ r }) => r.attempts === 2).length;
      // Every call the balancer started on the stalled server was answered by its backup.
      assert(backups >= 1, "no call started on the stalled server");
      assertEquals(c.stats().backups, backups);
      assert(wall < 3000, `30 calls took ${wall.toFixed(0)} ms`);
    } finally {
      for (const f of fleet) f.stall.ms = 0;
      await closeAll([c], fleet, []);
    }
  });
}, { skip, timeoutMs: 60_000 });
