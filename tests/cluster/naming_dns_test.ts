/**
 * dns://, http:// (brpc's DNS spelling) and dns+srv:// — against a DNS server this test runs on
 * UDP loopback (tests/cluster/dns_responder.ts, node:dgram), which the service is pointed at
 * through `dnsServers` (node:dns Resolver.setServers with a port; both runtimes support it), and
 * against the system resolver for `localhost`. Lists sorted (a rotated answer is no change),
 * changes told once, failures keep the last list, a mute server times out, close() leaves
 * nothing running.
 */
import { VerbusError } from "../../errors.ts";
import { namingService } from "../../rpc/cluster/naming.ts";
import "../../rpc/cluster/registry.ts";
import {
  dnsNamingService,
  httpNamingService,
  srvNamingService,
} from "../../rpc/cluster/naming_dns.ts";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { startDnsResponder } from "./dns_responder.ts";
import { exitsAfterClose, Recorder, sleep } from "./naming_util.ts";

test("dns URLs: ports, brpc's http:// defaults, bad ones named", () => {
  for (const bad of ["dns://host", "dns://host:0", "dns://:80", "dns://ho st:80", "dns://a:1/x"]) {
    const e = assertThrows(() => dnsNamingService(bad), VerbusError, bad);
    assertEquals(e.code, "INVALID_ARGUMENT");
    assert(e.message.includes(bad), e.message);
  }
  assertThrows(() => srvNamingService("dns+srv://web.example"), VerbusError); // no _service
  assertThrows(
    () => dnsNamingService("dns://a:1", { dnsServers: ["not an address"] }),
    VerbusError,
  );
  httpNamingService("http://www.example/path?q").close();
  srvNamingService("dns+srv://_web._tcp.example.").close();
});

test("dns://localhost and http://localhost ask the system resolver (/etc/hosts)", async () => {
  const ns = namingService("dns://localhost:8000");
  const got = (await ns.resolve()).map((s) => s.address);
  assert(got.includes("127.0.0.1:8000"), JSON.stringify(got));
  ns.close();
  const http = namingService("http://localhost/ignored/path");
  assert((await http.resolve()).some((s) => s.address === "127.0.0.1:80"));
  http.close();
  const literal = namingService("dns://[::1]:9");
  assertEquals(await literal.resolve(), [{ address: "[::1]:9", tag: "", weight: 1 }]);
  literal.close();
});

test("dns://: A and AAAA from the given server, sorted; a rotation is no change", async () => {
  const dns = await startDnsResponder();
  const ns = dnsNamingService("dns://svc.test:7000", { dnsServers: [dns.server], pollMs: 50 });
  try {
    dns.table.a.set("svc.test", ["127.0.0.3", "127.0.0.2"]);
    dns.table.aaaa.set("svc.test", ["::1"]);
    const r = new Recorder();
    ns.watch(r);
    assertEquals(await r.servers("first"), ["127.0.0.2:7000", "127.0.0.3:7000", "[::1]:7000"]);
    dns.table.a.set("svc.test", ["127.0.0.2", "127.0.0.3"]);
    await sleep(300);
    assertEquals(r.pending(), 0, `a rotated answer was told: ${r.show()}`);
    dns.table.a.set("svc.test", ["127.0.0.4"]);
    assertEquals(await r.servers("changed"), ["127.0.0.4:7000", "[::1]:7000"]);
    assert(dns.questions.includes("svc.test 1") && dns.questions.includes("svc.test 28"));
  } finally {
    ns.close();
    await dns.close();
  }
});

test("dns://: SERVFAIL, NXDOMAIN and silence keep the last list, each reported", async () => {
  const dns = await startDnsResponder();
  const ns = dnsNamingService("dns://svc.test:1", {
    dnsServers: [dns.server],
    pollMs: 50,
    timeoutMs: 300,
  });
  try {
    dns.table.a.set("svc.test", ["127.0.0.5"]);
    const r = new Recorder();
    ns.watch(r);
    assertEquals(await r.servers("first"), ["127.0.0.5:1"]);
    dns.fail = true;
    const e1 = await r.error("SERVFAIL");
    assert(e1.message.includes("svc.test"), e1.message);
    await sleep(250);
    assertEquals(r.pending(), 0, `the same failure was told again: ${r.show()}`);
    // Deno's node:dns reports SERVFAIL as ENOTFOUND, as it does NXDOMAIN (Bun: ESERVFAIL), so
    // a success comes between the two, or the second would be the same failure repeated.
    dns.fail = false;
    dns.table.a.set("svc.test", ["127.0.0.8"]);
    assertEquals(await r.servers("recovered"), ["127.0.0.8:1"]);
    dns.table.a.delete("svc.test");
    assertEquals((await r.error("NXDOMAIN")).code, "NOT_FOUND");
    dns.table.a.set("svc.test", ["127.0.0.5"]);
    dns.mute = true;
    const t0 = Date.now();
    assertEquals((await r.error("silence", 3_000)).code, "TIMEOUT");
    assert(Date.now() - t0 < 2_000, "the timeout took too long");
    dns.mute = false;
    dns.table.a.set("svc.test", ["127.0.0.6"]);
    assertEquals(await r.servers("back"), ["127.0.0.6:1"]);
  } finally {
    ns.close();
    await dns.close();
  }
});

test("dns+srv://: lowest priority, targets resolved, SRV weight as the tag", async () => {
  const dns = await startDnsResponder();
  const ns = srvNamingService("dns+srv://_rpc._tcp.svc.test", {
    dnsServers: [dns.server],
    pollMs: 50,
  });
  try {
    dns.table.srv.set("_rpc._tcp.svc.test", [
      { priority: 10, weight: 3, port: 8001, target: "a.svc.test" },
      { priority: 10, weight: 0, port: 8002, target: "b.svc.test" },
      { priority: 20, weight: 9, port: 8003, target: "backup.svc.test" },
    ]);
    dns.table.a.set("a.svc.test", ["127.0.0.11"]);
    dns.table.a.set("b.svc.test", ["127.0.0.12"]);
    dns.table.aaaa.set("b.svc.test", ["::1"]);
    dns.table.a.set("backup.svc.test", ["127.0.0.13"]);
    assertEquals(await ns.resolve(), [
      { address: "127.0.0.11:8001", tag: "3", weight: 3 },
      { address: "127.0.0.12:8002", tag: "", weight: 1 },
      { address: "[::1]:8002", tag: "", weight: 1 },
    ]);
    const r = new Recorder();
    ns.watch(r);
    assertEquals((await r.servers("first")).length, 3);
    // The primaries gone: the backups take their place.
    dns.table.srv.set("_rpc._tcp.svc.test", [
      { priority: 20, weight: 9, port: 8003, target: "backup.svc.test" },
    ]);
    assertEquals(await r.servers("backups"), ["127.0.0.13:8003 9"]);
    // A target that does not resolve is skipped while another does.
    dns.table.srv.set("_rpc._tcp.svc.test", [
      { priority: 1, weight: 1, port: 8004, target: "gone.svc.test" },
      { priority: 1, weight: 1, port: 8001, target: "a.svc.test" },
    ]);
    assertEquals(await r.servers("one target gone"), ["127.0.0.11:8001 1"]);
    dns.table.srv.delete("_rpc._tcp.svc.test");
    assertEquals((await r.error("no SRV")).code, "NOT_FOUND");
  } finally {
    ns.close();
    await dns.close();
  }
});

test("dns: close() aborts a question in flight; resolve after close is CLOSED", async () => {
  const dns = await startDnsResponder();
  dns.mute = true;
  const ns = dnsNamingService("dns://svc.test:1", { dnsServers: [dns.server], timeoutMs: 10_000 });
  try {
    const pending = ns.resolve();
    await sleep(100);
    const t0 = Date.now();
    ns.close();
    const e = await assertRejects(() => pending, VerbusError);
    assertEquals(e.code, "CLOSED");
    assert(Date.now() - t0 < 1_000);
    assertEquals((await assertRejects(() => ns.resolve(), VerbusError)).code, "CLOSED");
  } finally {
    await dns.close();
  }
});

test("dns: a child that watched (a question in flight) and closed exits by itself", async () => {
  const dns = await startDnsResponder();
  try {
    dns.table.a.set("svc.test", ["127.0.0.7"]);
    // Polls every 20 ms with a 60 s timeout: when close() comes, a question or a timer is live.
    const out = await exitsAfterClose("dns://svc.test:5", {
      dnsServers: [dns.server],
      pollMs: 20,
      timeoutMs: 60_000,
    }, 300);
    assert(out.includes('servers ["127.0.0.7:5"]'), out);
    dns.mute = true;
    const out2 = await exitsAfterClose("dns+srv://_x._tcp.svc.test", {
      dnsServers: [dns.server],
      timeoutMs: 500,
    }, 0);
    assert(out2.includes("error TIMEOUT"), out2);
  } finally {
    await dns.close();
  }
});
