/**
 * consul:// — no Consul server is installable on these machines (not in Debian, no network past
 * the package registries), so the service is tested against answers recorded in the shape of
 * Consul's `/v1/health/service/NAME` (entries with Node, Service and Checks; the X-Consul-Index
 * header), served by a tiny node:http server on loopback (both runtimes) that the test scripts
 * question by question: the blocking query that returns after a change, a wait that ends without
 * one, an index that goes backwards (reset), an index of 0, garbage JSON, a 500, no index, a
 * hang (timeout), no agent at all, and close() with a blocking query in flight.
 */
import http from "node:http";
import { VerbusError } from "../../errors.ts";
import { consulNamingService, parseConsulServices } from "../../rpc/cluster/naming_consul.ts";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { exitsAfterClose, Recorder, sleep } from "./naming_util.ts";

/** One recorded entry, as Consul answers it (trimmed of fields the service does not read). */
function entry(
  node: string,
  service: { Address: string; Port: number; Tags?: unknown },
): Record<string, unknown> {
  return {
    Node: {
      ID: "40e4a748-2192-161a-0510-9bf59fe950b5",
      Node: "n1",
      Address: node,
      Datacenter: "dc1",
    },
    Service: {
      ID: "web1",
      Service: "web",
      Meta: {},
      Weights: { Passing: 10, Warning: 1 },
      ...service,
    },
    Checks: [{ Node: "n1", CheckID: "serfHealth", Status: "passing", ServiceID: "" }],
  };
}

/** What the fake agent does with one question. */
type Answer =
  | { status?: number; index?: string | null; body: unknown }
  | "hang";

/** A scripted agent: each question waits for the test to give its answer. */
class FakeAgent {
  readonly questions: { url: string; token?: string }[] = [];
  #waiting: ((a: Answer) => void)[] = [];
  #wake: (() => void) | undefined;
  readonly #server: http.Server;
  readonly #hung = new Set<http.ServerResponse>();
  port = 0;

  constructor() {
    this.#server = http.createServer((req, res) => {
      this.questions.push({ url: req.url ?? "", token: req.headers["x-consul-token"] as string });
      this.#waiting.push((a) => {
        if (a === "hang") return void this.#hung.add(res);
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (a.index !== null) headers["x-consul-index"] = a.index ?? "1";
        res.writeHead(a.status ?? 200, headers);
        res.end(typeof a.body === "string" ? a.body : JSON.stringify(a.body));
      });
      this.#wake?.();
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((r) => this.#server.listen(0, "127.0.0.1", () => r()));
    this.port = (this.#server.address() as { port: number }).port;
    return `http://127.0.0.1:${this.port}`;
  }

  /** Waits for the next question and answers it; returns its URL. */
  async answer(a: Answer, timeoutMs = 5_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (this.#waiting.length === 0) {
      if (Date.now() > deadline) throw new Error(`no question in ${timeoutMs} ms`);
      await new Promise<void>((r) => {
        this.#wake = r;
        setTimeout(r, 50);
      });
    }
    const url = this.questions[this.questions.length - this.#waiting.length].url;
    this.#waiting.shift()!(a);
    return url;
  }

  /** Waits until `n` questions are held (a blocking query has come in), at most 3 s. */
  async held(n: number): Promise<number> {
    for (let i = 0; i < 60 && this.#waiting.length < n; i++) await sleep(50);
    return this.#waiting.length;
  }

  /** Questions asked and not answered yet. */
  open(): number {
    return this.#waiting.length;
  }

  async close(): Promise<void> {
    for (const res of this.#hung) res.destroy();
    this.#server.closeAllConnections?.();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }
}

const WEB = [entry("127.0.0.1", { Address: "127.0.0.2", Port: 8000, Tags: ["primary", "v2"] })];
const WEB2 = [...WEB, entry("127.0.0.3", { Address: "", Port: 8001, Tags: ["7"] })];

test("consul answers: Service or Node address, the first tag, bad entries skipped", () => {
  const logs: string[] = [];
  const got = parseConsulServices(
    JSON.stringify([
      ...WEB2,
      entry("::1", { Address: "", Port: 8002 }),
      entry("127.0.0.4", { Address: "127.0.0.2", Port: 8000, Tags: ["dup"] }),
      entry("127.0.0.5", { Address: "127.0.0.5", Port: 0 }),
      entry("127.0.0.6", { Address: "127.0.0.6", Port: 1, Tags: "primary" }),
      entry("127.0.0.7", { Address: "127.0.0.7", Port: 1, Tags: [3] }),
      { Node: { Address: "127.0.0.8" } },
    ]),
    "consul://web",
    (l) => logs.push(l),
  );
  assertEquals(got, [
    { address: "127.0.0.2:8000", tag: "primary", weight: 1 },
    { address: "127.0.0.3:8001", tag: "7", weight: 7 },
    { address: "[::1]:8002", tag: "", weight: 1 },
  ]);
  assertEquals(logs.length, 4, logs.join("\n"));
  assert(logs.some((l) => l.includes("entry 7 skipped: no Service")), logs.join("\n"));
  assertEquals(parseConsulServices("[]", "w", () => {}), []);
  for (const bad of ["{", "{}", "null", JSON.stringify([{ Service: { Port: 1 } }])]) {
    const e = assertThrows(() => parseConsulServices(bad, "consul://web", () => {}), VerbusError);
    assertEquals(e.code, "PROTOCOL", bad);
  }
});

test("consul://: bad names and options are refused", () => {
  assertThrows(() => consulNamingService("consul://"), VerbusError);
  assertThrows(() => consulNamingService("consul://a/b"), VerbusError);
  assertThrows(() => consulNamingService("consul://web", { consulWaitS: 0 }), VerbusError);
  assertThrows(() => consulNamingService("consul://web", { consulParams: "a?b" }), VerbusError);
});

test("consul://: blocking queries follow X-Consul-Index; only changes are told", async () => {
  const agent = new FakeAgent();
  const addr = await agent.start();
  // HOST:PORT without a scheme is http, as CONSUL_HTTP_ADDR is written.
  const ns = consulNamingService("consul://web", {
    consulAgent: addr.slice("http://".length),
    consulToken: "s3cret",
    retryMs: 50,
  });
  try {
    const r = new Recorder();
    ns.watch(r);
    assertEquals(
      await agent.answer({ index: "10", body: WEB }),
      "/v1/health/service/web?stale&passing",
    );
    assertEquals(agent.questions[0].token, "s3cret");
    assertEquals(await r.servers("first"), ["127.0.0.2:8000 primary"]);
    assertEquals(await agent.held(1), 1, "the blocking query is asked at once and held");
    // The list changed while the query was held: Consul answers it with the new index.
    assertEquals(
      await agent.answer({ index: "11", body: WEB2 }),
      "/v1/health/service/web?stale&passing&index=10&wait=60s",
    );
    assertEquals(await r.servers("changed"), ["127.0.0.2:8000 primary", "127.0.0.3:8001 7"]);
    // The wait ended without a change: same index, nothing told, asked again on that index.
    assert((await agent.answer({ index: "11", body: WEB2 })).endsWith("index=11&wait=60s"));
    assert((await agent.answer({ index: "12", body: WEB2 })).endsWith("index=11&wait=60s"));
    await sleep(100);
    assertEquals(r.pending(), 0, `an unchanged list was told: ${r.show()}`);
    // The index went backwards (a new leader, a restored snapshot): start over, not blocking.
    assert((await agent.answer({ index: "3", body: WEB })).endsWith("index=12&wait=60s"));
    assertEquals(await r.servers("after the reset"), ["127.0.0.2:8000 primary"]);
    assertEquals(
      await agent.answer({ index: "0", body: WEB }),
      "/v1/health/service/web?stale&passing",
    );
    // An index of 0 is blocked on as 1, never as 0.
    assert((await agent.answer({ index: "4", body: [] })).endsWith("index=1&wait=60s"));
    assertEquals(await r.servers("emptied"), [], "an empty answer is a real one");
  } finally {
    ns.close();
    await agent.close();
  }
});

test("consul://: garbage, 500, no index, hang: last list kept, reported, backoff", async () => {
  const agent = new FakeAgent();
  const addr = await agent.start();
  const ns = consulNamingService("consul://web", {
    consulAgent: addr,
    retryMs: 100,
    maxBackoffMs: 400,
    timeoutMs: 300,
  });
  try {
    const r = new Recorder();
    ns.watch(r);
    await agent.answer({ index: "10", body: WEB });
    assertEquals(await r.servers("first"), ["127.0.0.2:8000 primary"]);
    await agent.answer({ index: "11", body: "[{not json" });
    const e1 = await r.error("garbage");
    assertEquals(e1.code, "PROTOCOL");
    assert(e1.message.includes("not JSON"), e1.message);
    // After a failure the loop starts over without blocking, and waits before it.
    let t0 = Date.now();
    assertEquals(
      await agent.answer({ status: 500, index: "11", body: "rpc error: No cluster leader" }),
      "/v1/health/service/web?stale&passing",
    );
    assert(Date.now() - t0 >= 80, "no backoff after a failure");
    const e2 = await r.error("500");
    assert(
      e2.message.includes("status 500") && e2.message.includes("No cluster leader"),
      e2.message,
    );
    t0 = Date.now();
    await agent.answer({ index: null, body: WEB2 });
    assert(Date.now() - t0 >= 150, "the backoff did not grow");
    assert((await r.error("no index")).message.includes("X-Consul-Index"));
    await agent.answer("hang");
    const e3 = await r.error("hang", 3_000);
    assertEquals(e3.code, "TIMEOUT");
    await agent.answer({ index: "20", body: WEB2 });
    assertEquals(await r.servers("back"), ["127.0.0.2:8000 primary", "127.0.0.3:8001 7"]);
  } finally {
    ns.close();
    await agent.close();
  }
});

test("consul://: no agent is CONNECT_FAILED; resolve is one plain question", async () => {
  const agent = new FakeAgent();
  const addr = await agent.start();
  await agent.close(); // a port nobody listens on any more
  const gone = consulNamingService("consul://web", { consulAgent: addr, timeoutMs: 2_000 });
  const e = await assertRejects(() => gone.resolve(), VerbusError);
  assertEquals(e.code, "CONNECT_FAILED");
  assert(e.message.includes(addr), e.message);
  gone.close();
  const live = new FakeAgent();
  const ns = consulNamingService("consul://web", { consulAgent: await live.start() });
  try {
    const p = ns.resolve();
    assertEquals(
      await live.answer({ index: "5", body: WEB }),
      "/v1/health/service/web?stale&passing",
    );
    assertEquals((await p).map((s) => s.address), ["127.0.0.2:8000"]);
  } finally {
    ns.close();
    await live.close();
  }
});

test("consul://: close() aborts the blocking query; a child exits by itself", async () => {
  const agent = new FakeAgent();
  const addr = await agent.start();
  try {
    const ns = consulNamingService("consul://web", { consulAgent: addr });
    const r = new Recorder();
    ns.watch(r);
    await agent.answer({ index: "10", body: WEB });
    await r.servers("first");
    assertEquals(await agent.held(1), 1, "no blocking query");
    ns.close();
    await sleep(100);
    await agent.answer({ index: "11", body: WEB2 }).catch(() => {});
    await sleep(100);
    assertEquals(r.pending(), 0, `told after close: ${r.show()}`);
    const child = exitsAfterClose("consul://web", { consulAgent: addr }, 300);
    await agent.answer({ index: "10", body: WEB }, 20_000);
    await agent.answer("hang", 20_000); // the blocking query close() must abort
    assert((await child).includes('servers ["127.0.0.2:8000"]'));
  } finally {
    await agent.close();
  }
});
