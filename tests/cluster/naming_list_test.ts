/**
 * list:// — brpc's syntax (commas, tags, weights, IPv6 in brackets, `#` after a tag), bad entries
 * named, the list told once, close() stopping a watch before it was told, and the dispatch by
 * scheme through the registry. Also the contract's line parser, which every service uses.
 */
import { VerbusError } from "../../errors.ts";
import { namingService, parseServerLine, serverNode } from "../../rpc/cluster/naming.ts";
import "../../rpc/cluster/registry.ts";
import { listNamingService, parseServerList } from "../../rpc/cluster/naming_list.ts";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { exitsAfterClose, Recorder, sleep } from "./naming_util.ts";

test("parseServerLine: tags, weights, IPv6, comments, bad ports named", () => {
  assertEquals(parseServerLine("  10.0.0.1:80   3 "), {
    address: "10.0.0.1:80",
    tag: "3",
    weight: 3,
  });
  assertEquals(parseServerLine("[::1]:8000 main"), {
    address: "[::1]:8000",
    tag: "main",
    weight: 1,
  });
  assertEquals(parseServerLine("host.example:9\tgold  zone # a comment"), {
    address: "host.example:9",
    tag: "gold  zone",
    weight: 1,
  });
  assertEquals(parseServerLine("a:1 # only a comment"), { address: "a:1", tag: "", weight: 1 });
  assertEquals(parseServerLine("a:1 0"), { address: "a:1", tag: "0", weight: 1 });
  assertEquals(parseServerLine("   "), null);
  assertEquals(parseServerLine("# 1.2.3.4:5"), null);
  for (const bad of ["1.2.3.4", "1.2.3.4:0", "1.2.3.4:65536", "::1:80", "[::1]", "a:b", ":80"]) {
    const e = assertThrows(() => parseServerLine(`${bad} tag`), VerbusError);
    assertEquals(e.code, "INVALID_ARGUMENT");
    assert(e.message.includes(bad), e.message);
  }
  assertEquals(serverNode("[fe80::1]:7", "12"), { address: "[fe80::1]:7", tag: "12", weight: 12 });
  assertThrows(() => serverNode("x:1#", ""), VerbusError);
});

test("list://: brpc's syntax unchanged; a repeated address keeps its first entry", () => {
  assertEquals(parseServerList("list://a:1,b:2 tag, [::1]:3 5 ,, c.example:4 # note,a:1 other"), [
    { address: "a:1", tag: "", weight: 1 },
    { address: "b:2", tag: "tag", weight: 1 },
    { address: "[::1]:3", tag: "5", weight: 5 },
    { address: "c.example:4", tag: "", weight: 1 },
  ]);
  assertEquals(parseServerList("list://"), []);
});

test("list://: a bad entry is named with its place", () => {
  const e = assertThrows(() => listNamingService("list://a:1, b:99999 t,c:3"), VerbusError);
  assertEquals(e.code, "INVALID_ARGUMENT");
  assert(e.message.includes('entry 2 "b:99999 t"'), e.message);
  assertThrows(() => listNamingService("file://a:1"), VerbusError);
  assertThrows(() => listNamingService("list://a:1", { pollMs: -1 }), VerbusError);
});

test("list://: resolve, one event per watch; close stops watches, refuses new ones", async () => {
  const ns = namingService("list://127.0.0.1:1 2,127.0.0.1:2");
  assertEquals((await ns.resolve()).map((s) => s.weight), [2, 1]);
  const r = new Recorder();
  const stop = ns.watch(r);
  assertEquals(r.pending(), 0, "told before watch() returned");
  assertEquals(await r.servers("first"), ["127.0.0.1:1 2", "127.0.0.1:2"]);
  await sleep(50);
  assertEquals(r.pending(), 0, "a fixed list is told once");
  stop();
  stop();
  const late = new Recorder();
  ns.watch(late);
  ns.close();
  await sleep(20);
  assertEquals(late.events.length, 0, "close() before the first event: nothing is told");
  assertThrows(() => ns.watch(new Recorder()), VerbusError);
  const e = await assertRejects(() => ns.resolve(), VerbusError);
  assertEquals(e.code, "CLOSED");
  ns.close();
});

test("namingService: every scheme of this module is registered; unknown ones are named", () => {
  for (const s of ["list", "file", "dns", "dns+srv", "http", "consul"]) {
    const url = s === "list"
      ? "list://a:1"
      : s === "file"
      ? "file:///nonexistent"
      : s === "dns+srv"
      ? "dns+srv://_x._tcp.example"
      : s === "consul"
      ? "consul://web"
      : `${s}://localhost:80`;
    const ns = namingService(url);
    assertEquals(ns.url, url);
    ns.close();
  }
  const e = assertThrows(() => namingService("zk://x"), VerbusError);
  assert(e.message.includes("consul://") && e.message.includes("dns+srv://"), e.message);
});

test("list://: a process that watched and closed exits by itself", async () => {
  const out = await exitsAfterClose("list://127.0.0.1:5,127.0.0.1:6", {});
  assert(out.includes('servers ["127.0.0.1:5","127.0.0.1:6"]'), out);
});
