/**
 * Servers registering themselves in a real etcd (`serve({ register })`, `verbus serve
 * --register`) and the etcd naming service following them: three register and are seen, a clean
 * close is gone within one watch round, a SIGKILLed server when its lease ends, a later one is
 * seen at once; a registration that cannot reach etcd is a clear error at start; etcd going away
 * and coming back is logged and survived; close() leaves nothing that keeps a process alive.
 * @module
 */
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { etcdNaming } from "../../rpc/cluster/naming_etcd.ts";
import { b64, etcdPost, prefixEnd, unb64 } from "../../rpc/cluster/etcd_gateway.ts";
import { advertisedAddress } from "../../rpc/cluster/etcd_register.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { spawnScript } from "../util/proc.ts";
import { ETCD_SKIP, freePort, withEtcd } from "./etcd.ts";
import { Recorder } from "./etcd_util.ts";

const skip = ETCD_SKIP;
const rt = RUNTIME as RuntimeName;

function startServer(url: string, ttlSeconds = 10, lines: string[] = []): Promise<Server> {
  return serve({
    port: 0,
    services: {},
    fabric: false,
    register: { url, ttlSeconds, tag: "" },
    logger: { warn: (m) => void lines.push(m) },
  });
}

/** `verbus serve --register URL` (TCP only) on this runtime, with `extra` arguments. */
function serveRegistered(url: string, extra: string[], ready?: RegExp) {
  const args = ["serve", "--port", "0", "--fabric", "none", "--register", url, ...extra];
  return spawnScript(rt, "cli/main.ts", { args, ...(ready ? { ready } : {}) });
}

test("advertised address: the listening host, brackets for IPv6, a real one for wildcards", () => {
  assertEquals(advertisedAddress("127.0.0.1", 80), "127.0.0.1:80");
  assertEquals(advertisedAddress("::1", 80), "[::1]:80");
  const any = advertisedAddress("0.0.0.0", 81);
  assert(/^[0-9.]+:81$/.test(any) && !any.startsWith("0.0.0.0"), any);
});

test(
  "etcd registration: three servers seen; a clean close gone at once; a later one seen",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("reg/demo");
      const servers = await Promise.all([0, 1, 2].map(() => startServer(url)));
      const ns = etcdNaming(url, { timeoutMs: 2000 });
      const others: Server[] = [];
      try {
        const addr = (s: Server) => `127.0.0.1:${s.port}`;
        // The layout on the wire: key PREFIX/<address>, JSON value, under a lease.
        const raw = await etcdPost(etcd.endpoint, "/v3/kv/range", {
          key: b64("/reg/demo/"),
          range_end: prefixEnd("/reg/demo/"),
        }, 5000);
        const kvs = (raw.kvs as Record<string, string>[]).map((kv) => [unb64(kv.key), kv.lease]);
        assertEquals(kvs.map(([k]) => k).sort(), servers.map((s) => `/reg/demo/${addr(s)}`).sort());
        assert(
          kvs.every(([, lease]) => /^\d+$/.test(lease) && lease !== "0"),
          "each under a lease",
        );
        assertEquals(servers[0].registration?.key, `/reg/demo/${addr(servers[0])}`);

        const r = new Recorder();
        ns.watch(r);
        const all = servers.map(addr).sort();
        await r.until((r) => r.last?.length === 3, 5000, "the three servers");
        assertEquals(r.last, all);

        const t0 = performance.now();
        await servers[1].close();
        const closeMs = performance.now() - t0;
        const goneMs = await r.until((r) => r.last?.length === 2, 2000, "the closed server gone");
        assertEquals(r.last, all.filter((a) => a !== addr(servers[1])));
        assert(closeMs < 2000, `close() took ${closeMs} ms`);

        others.push(await startServer(url));
        const seenMs = await r.until((r) => r.last?.length === 3, 2000, "the new server");
        assert(r.last!.includes(addr(others[0])), JSON.stringify(r.last));
        console.log(
          `  gone ${goneMs.toFixed(0)} ms after close(); new one seen in ${seenMs.toFixed(0)} ms`,
        );
        assertEquals(r.errors.length, 0);
      } finally {
        ns.close();
        await Promise.all([...servers, ...others].map((s) => s.close()));
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);

test(
  "etcd registration: a SIGKILLed server (verbus serve --register) goes when its lease ends",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("kill/demo");
      const child = await serveRegistered(url, ["--register-ttl", "2"]);
      const ns = etcdNaming(url, { timeoutMs: 2000 });
      try {
        const r = new Recorder();
        ns.watch(r);
        await r.until((r) => r.last?.length === 1, 5000, "the serve child");
        assertEquals(r.last, [`127.0.0.1:${child.port}`]);
        await child.kill("SIGKILL");
        const t0 = performance.now();
        await new Promise((res) => setTimeout(res, 300));
        assertEquals(r.last?.length, 1, "still there while its lease lasts");
        await r.until((r) => r.last?.length === 0, 6000, "the killed server gone");
        const ms = performance.now() - t0;
        assert(ms < 2000 + 3000, `gone ${ms} ms after the kill (TTL 2 s)`);
        console.log(`  gone ${ms.toFixed(0)} ms after SIGKILL (TTL 2 s)`);
      } finally {
        ns.close();
        await child.kill();
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);

test(
  "etcd registration: verbus serve --json --register-tag names its key, lease and tag; the tag is in etcd",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("tagged/demo");
      const child = await serveRegistered(url, ["--json"], /\{"listening":true.*\}\n/);
      const tagged = await serveRegistered(url, ["--register-tag", "3"]);
      const ns = etcdNaming(url, { timeoutMs: 2000 });
      try {
        const line = JSON.parse(/\{"listening":true.*\}/.exec(child.output())![0]);
        const address = `127.0.0.1:${line.port}`;
        assertEquals(line.registered.key, `/tagged/demo/${address}`);
        assertEquals([line.registered.url, line.registered.address], [url, address]);
        assertEquals([line.registered.tag, line.registered.ttlSeconds], ["", 10]);
        assert(
          /^\d+$/.test(line.registered.lease) && line.registered.lease !== "0",
          line.registered.lease,
        );
        // The text line names the key too; the tag reaches etcd and the naming service.
        const key = `/tagged/demo/127.0.0.1:${tagged.port}`;
        assert(tagged.output().includes(`registered in etcd as ${key} (lease `), tagged.output());
        const raw = await etcdPost(etcd.endpoint, "/v3/kv/range", { key: b64(key) }, 5000);
        const value = unb64((raw.kvs as Record<string, string>[])[0].value);
        assertEquals(JSON.parse(value), { address: `127.0.0.1:${tagged.port}`, tag: "3" });
        const nodes = await ns.resolve();
        assertEquals(
          nodes.map((n) => [n.address, n.tag]).sort(),
          [[address, ""], [`127.0.0.1:${tagged.port}`, "3"]].sort(),
        );
      } finally {
        ns.close();
        await Promise.all([child.kill("SIGTERM"), tagged.kill("SIGTERM")]);
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);

test("etcd registration: no etcd at start is a clear error and the server is closed", async () => {
  const port = await freePort(); // nothing listens there
  const url = `etcd://127.0.0.1:${port}/none`;
  const listen = await freePort();
  const e = await assertRejects(
    () => serve({ port: listen, services: {}, fabric: false, register: url }),
    VerbusError,
    url,
  );
  assertEquals(e.code, "CONNECT_FAILED");
  // The server it had started was closed: its port is free again (on Deno a closed listener's
  // port can take a moment to be released, so a few tries; an open one never is).
  let again: Server | null = null;
  for (let i = 0; i < 40 && again === null; i++) {
    again = await serve({ port: listen, services: {}, fabric: false }).catch(() => null);
    if (again === null) await new Promise((res) => setTimeout(res, 50));
  }
  assert(again !== null, `port ${listen} still taken after a failed registration`);
  await again.close();
  await assertRejects(
    () => serve({ port: 0, services: {}, fabric: false, register: "http://x:1/p" }),
    VerbusError,
    "expected etcd://HOST:PORT/PREFIX",
  );
}, { timeoutMs: 30_000 });

test(
  "etcd registration: etcd killed is logged and survived; back, the key is kept alive",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("away/demo");
      const lines: string[] = [];
      const server = await startServer(url, 3, lines);
      const ns = etcdNaming(url, { timeoutMs: 1000, maxBackoffMs: 300 });
      try {
        await etcd.kill();
        const t0 = performance.now();
        while (!lines.some((l) => l.includes("keepalive")) && performance.now() - t0 < 5000) {
          await new Promise((res) => setTimeout(res, 50));
        }
        assert(
          lines.some((l) => /keepalive of \/away\/demo\/127\.0\.0\.1:\d+ failed/.test(l)),
          lines.join("\n"),
        );
        await etcd.restart();
        const t1 = performance.now();
        while (
          !lines.some((l) => l.includes("kept alive again")) && performance.now() - t1 < 8000
        ) {
          await new Promise((res) => setTimeout(res, 50));
        }
        assert(lines.some((l) => l.includes("kept alive again")), lines.join("\n"));
        // Kept alive past its TTL: still registered.
        await new Promise((res) => setTimeout(res, 3500));
        assertEquals((await ns.resolve()).map((s) => s.address), [`127.0.0.1:${server.port}`]);
      } finally {
        ns.close();
        await server.close();
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);

test(
  "etcd: close() of a registered server and a naming service leaves nothing running",
  async () => {
    await withEtcd(async (etcd) => {
      const url = etcd.url("close/demo");
      const child = await spawnScript(rt, "tests/cluster/fixtures/etcd_close_child.ts", {
        args: [url],
        ready: /saw /,
      });
      try {
        const code = await Promise.race([
          child.exited,
          new Promise((res) => setTimeout(() => res("still running 10 s after close()"), 10_000)),
        ]);
        assertEquals(code, 0, child.output());
        assert(child.output().includes("closed"), child.output());
        // Its clean stop revoked the lease: the key is gone now, not at the TTL.
        const ns = etcdNaming(url);
        try {
          assertEquals(await ns.resolve(), []);
        } finally {
          ns.close();
        }
      } finally {
        await child.kill();
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);
