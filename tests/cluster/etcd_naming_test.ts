/**
 * The etcd naming service against a real etcd (a private one per test, `tests/cluster/etcd.ts`):
 * the key/value layouts it reads, following puts and deletes through the watch, a compaction
 * behind a paused watch, etcd killed and restarted, and peers that are not etcd (silent, or
 * answering garbage) — every wait ends at its deadline, never a crash.
 * @module
 */
import { createServer, type Server, type Socket } from "node:net";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { etcdPost, parseEtcdUrl, prefixEnd } from "../../rpc/cluster/etcd_gateway.ts";
import { etcdNaming, nodeFromKv } from "../../rpc/cluster/naming_etcd.ts";
import { namingService } from "../../rpc/cluster/naming.ts";
import "../../rpc/cluster/registry.ts";
import { ETCD_SKIP, withEtcd } from "./etcd.ts";
import { etcdDelete, etcdPut, Recorder } from "./etcd_util.ts";

const skip = ETCD_SKIP;

test("etcd URLs: endpoints, the prefix always ending in /, what is wrong named", () => {
  assertEquals(parseEtcdUrl("etcd://127.0.0.1:2379/verbus/demo"), {
    url: "etcd://127.0.0.1:2379/verbus/demo",
    endpoints: ["127.0.0.1:2379"],
    prefix: "/verbus/demo/",
  });
  assertEquals(parseEtcdUrl("etcd://a:1,[::1]:2/x%20y/").endpoints, ["a:1", "[::1]:2"]);
  assertEquals(parseEtcdUrl("etcd://a:1/x%20y/").prefix, "/x y/");
  assertThrows(() => parseEtcdUrl("etcd://a:1"), VerbusError, "no key prefix");
  assertThrows(() => parseEtcdUrl("etcd://a:1//"), VerbusError, "no key prefix");
  assertThrows(() => parseEtcdUrl("etcd://a:99999/p"), VerbusError, "bad endpoint");
  assertThrows(() => parseEtcdUrl("etcd://a/p"), VerbusError, "bad endpoint");
  assertEquals(prefixEnd("/a/"), btoa("/a0"));
  assertEquals(prefixEnd("a"), btoa("b"));
});

test("etcd values: registration JSON, a brpc server line, an empty value, bad ones named", () => {
  const p = "/svc/";
  assertEquals(nodeFromKv("/svc/x", '{"address":"10.0.0.1:80","tag":"3"}', p), {
    address: "10.0.0.1:80",
    tag: "3",
    weight: 3,
  });
  assertEquals(nodeFromKv("/svc/x", '{"address":"[::1]:80","weight":2}', p)?.weight, 2);
  assertEquals(nodeFromKv("/svc/x", '{"address":"h:80","tag":"a#b"}', p)?.tag, "a#b");
  assertThrows(() => nodeFromKv("/svc/x", '{"address":"h:80 x"}', p), VerbusError, "/svc/x");
  assertEquals(nodeFromKv("/svc/x", "h:81 blue", p), { address: "h:81", tag: "blue", weight: 1 });
  assertEquals(nodeFromKv("/svc/h:82", "", p), { address: "h:82", tag: "", weight: 1 });
  assertThrows(() => nodeFromKv("/svc/x", "{nope", p), VerbusError, "/svc/x: value is not JSON");
  assertThrows(() => nodeFromKv("/svc/x", '{"tag":"1"}', p), VerbusError, 'no "address"');
  assertThrows(() => nodeFromKv("/svc/x", "h:0", p), VerbusError, "/svc/x");
});

test(
  "etcd naming: etcd:// is registered; range, then puts and deletes seen through the watch",
  async () => {
    await withEtcd(async (etcd) => {
      const e = etcd.endpoint;
      await etcdPut(e, "/svc/a/127.0.0.1:7001", '{"address":"127.0.0.1:7001","tag":"2"}');
      await etcdPut(e, "/svc/ab/127.0.0.1:7999", "127.0.0.1:7999"); // another prefix: never seen
      const ns = namingService(etcd.url("svc/a"), { timeoutMs: 2000 });
      try {
        assertEquals((await ns.resolve()).map((s) => s.address), ["127.0.0.1:7001"]);
        const r = new Recorder();
        const unwatch = ns.watch(r);
        await r.until((r) => r.lists.length === 1, 5000, "the first list");
        assertEquals(r.last, ["127.0.0.1:7001 2"]);
        await etcdPut(e, "/svc/a/127.0.0.1:7002", "");
        await r.until((r) => r.last?.length === 2, 3000, "the put");
        await etcdPut(e, "/svc/a/127.0.0.1:7001", '{"address":"127.0.0.1:7001","tag":"5"}');
        await r.until((r) => r.last?.[0] === "127.0.0.1:7001 5", 3000, "the new tag");
        await etcdDelete(e, "/svc/a/127.0.0.1:7002");
        await r.until((r) => r.last?.length === 1, 3000, "the delete");
        await etcdPut(e, "/svc/a/junk", "{not json"); // skipped, never a failure
        await etcdPut(e, "/svc/a/127.0.0.1:7003", "");
        await r.until((r) => r.last?.length === 2, 3000, "the put after the junk");
        assertEquals(r.last, ["127.0.0.1:7001 5", "127.0.0.1:7003"]);
        assertEquals(r.errors.length, 0);
        // Followed by one range and one watch: nothing polls.
        assertEquals((ns as ReturnType<typeof etcdNaming>).stats.watches, 1);
        unwatch();
      } finally {
        ns.close();
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);

test("etcd naming: a watch started again behind a compaction ranges again, no error", async () => {
  await withEtcd(async (etcd) => {
    const e = etcd.endpoint;
    await etcdPut(e, "/c/s/127.0.0.1:7001", "");
    const ns = etcdNaming(etcd.url("c/s"), { idleMs: 700, timeoutMs: 2000 });
    try {
      const r = new Recorder();
      ns.watch(r);
      await r.until((r) => r.lists.length === 1, 5000, "the first list");
      // Writes elsewhere move the store past the service's revision; compact them away.
      let rev = "0";
      for (let i = 0; i < 5; i++) {
        const a = await etcdPost(e, "/v3/kv/put", { key: btoa(`/other/${i}`), value: "" }, 5000);
        rev = String((a.header as { revision: string }).revision);
      }
      await etcdPost(e, "/v3/kv/compaction", { revision: rev, physical: true }, 5000);
      const ranges = ns.stats.ranges;
      // The idle watch is replaced from the old revision: etcd cancels it as compacted.
      const t0 = performance.now();
      while (ns.stats.ranges === ranges && performance.now() - t0 < 5000) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assertEquals(ns.stats.ranges, ranges + 1, "one range after the compaction");
      await etcdPut(e, "/c/s/127.0.0.1:7002", "");
      await r.until((r) => r.last?.length === 2, 3000, "a put after the compaction");
      assertEquals(r.errors.map((x) => x.message), []);
    } finally {
      ns.close();
    }
  });
}, { skip, timeoutMs: 60_000 });

test(
  "etcd naming: etcd killed keeps the last list and reports; restarted, it follows again",
  async () => {
    await withEtcd(async (etcd) => {
      const e = etcd.endpoint;
      await etcdPut(e, "/k/s/127.0.0.1:7001", "");
      const ns = etcdNaming(etcd.url("k/s"), { timeoutMs: 1000, maxBackoffMs: 300 });
      try {
        const r = new Recorder();
        ns.watch(r);
        await r.until((r) => r.lists.length === 1, 5000, "the first list");
        await etcd.kill();
        await r.until((r) => r.errors.length >= 2, 5000, "errors while etcd is down");
        assertEquals(r.lists, [["127.0.0.1:7001"]], "the last list stays in force");
        assert(
          r.errors.every((x) =>
            ["CONNECT_FAILED", "CONNECTION_CLOSED", "TIMEOUT"].includes(x.code)
          ),
          r.errors.map((x) => `${x.code} ${x.message}`).join("\n"),
        );
        assert(r.errors.some((x) => x.message.includes(e)), "the errors name etcd's address");
        await etcd.restart();
        await etcdPut(e, "/k/s/127.0.0.1:7002", "");
        await r.until((r) => r.last?.length === 2, 5000, "the put after the restart");
        const errs = r.errors.length;
        await etcdDelete(e, "/k/s/127.0.0.1:7001");
        await r.until((r) => r.last?.length === 1, 3000, "a delete after the restart");
        assertEquals(r.last, ["127.0.0.1:7002"]);
        assertEquals(r.errors.length, errs, "no error once etcd is back");
      } finally {
        ns.close();
      }
    });
  },
  { skip, timeoutMs: 60_000 },
);

/** A TCP server on loopback that does `onSocket` with each connection. */
async function fakePeer(onSocket: (s: Socket) => void): Promise<{ port: number; server: Server }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    s.on("close", () => sockets.delete(s));
    onSocket(s);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const close = server.close.bind(server);
  server.close = ((cb?: (err?: Error) => void) => {
    for (const s of sockets) s.destroy();
    return close(cb);
  }) as typeof server.close;
  return { port: (server.address() as { port: number }).port, server };
}

test(
  "etcd naming: a peer that never answers is a TIMEOUT, one that is not etcd a PROTOCOL",
  async () => {
    const silent = await fakePeer(() => {});
    const garbage = await fakePeer((s) =>
      s.once("data", () => s.end("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"))
    );
    const ns1 = etcdNaming(`etcd://127.0.0.1:${silent.port}/x`, { timeoutMs: 300 });
    const ns2 = etcdNaming(`etcd://127.0.0.1:${garbage.port}/x`, { timeoutMs: 2000 });
    try {
      const t0 = performance.now();
      await assertRejects(() => ns1.resolve(), VerbusError, "no answer in 300 ms");
      assert(performance.now() - t0 < 2000, "the deadline held");
      await assertRejects(() => ns2.resolve(), VerbusError, "not JSON: hello");
      const r = new Recorder();
      const unwatch = ns1.watch(r);
      await r.until((r) => r.errors.length >= 2, 5000, "errors from the silent peer");
      assertEquals(r.errors[0].code, "TIMEOUT");
      assertEquals(r.lists, []);
      unwatch();
    } finally {
      ns1.close();
      ns2.close();
      silent.server.close();
      garbage.server.close();
    }
    const ns = etcdNaming("etcd://127.0.0.1:1/x");
    ns.close();
    await assertRejects(() => ns.resolve(), VerbusError, "closed");
  },
  { timeoutMs: 30_000 },
);
