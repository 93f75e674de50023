/**
 * Hostile handshakes: every Hello field out of range, each way a handshake can end (counting
 * what the server took and gave back: fds, mappings, shm objects, simulated URMA objects), an
 * ACK after a second Hello, Hello storms (listeners, history and log bounded) and the fabric
 * limits (sessions, handshakes in progress). After each, the server still serves a real client.
 * @module
 */
import { existsSync } from "node:fs";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { connect } from "../../rpc/client/client.ts";
import { RpcError } from "../../rpc/errors.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { ACK_OFF, ACK_ON, encodeAck, FABRIC_SERVICE } from "../../rpc/session/handshake/hello.ts";
import type { ShmOffer } from "../../transport/shm/handshake.ts";
import type { ClientFabricProvider } from "../../transport/provider.ts";
import { createClientProvider } from "../../transport/urma/provider.ts";
import { endingsRelease, SMALL_REGION } from "./handshake_endings.ts";
import { sessionObjectLive } from "../util/shm.ts";
import type { UrmaLib } from "../../transport/urma/urma_lib.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { loadSim, SIM_PATH, SKIP_NO_SIM } from "../urma/util.ts";
import { type Held, held, sendHello, settleTo, sleep, until, validHello, within } from "./util.ts";

const SMALL = SMALL_REGION;
const SKIP = existsSync("/dev/shm") ? false : "no /dev/shm on this host";
const SIM = { urma: { library: SIM_PATH } };
const enc = new TextEncoder();

async function start(
  fabric: Record<string, unknown> = {},
  warnings: string[] = [],
): Promise<Server> {
  return await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.S": { Echo: (req: Uint8Array) => req } },
    fabric: { fabrics: ["shm"], region: SMALL, ...fabric },
    logger: { warn: (m) => warnings.push(m), info: (m) => warnings.push(m) },
  });
}

/** A real client gets the fabric (or `want`) and an answer from the server. */
async function stillServes(server: Server, want = "shm"): Promise<void> {
  const fabric = want.startsWith("urma") ? "urma" : "auto";
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    region: SMALL,
    fabric,
    ...(fabric === "urma" ? { providerOptions: SIM } : {}),
    logger: { warn: () => {} },
  });
  try {
    assertEquals(c.fabric, want, JSON.stringify(c.handshake));
    const r = await c.call("t.S", "Echo", enc.encode("alive"));
    assertEquals(new TextDecoder().decode(r.response), "alive");
  } finally {
    await c.close();
  }
}

const assertHeld = (now: Held, base: Held, what: string) =>
  assert(within(now, base), `${what}: held ${JSON.stringify(now)}, before ${JSON.stringify(base)}`);

/** Each bad Hello (as a patch of a valid one) and the field its refusal must name. */
const BAD_FIELDS: [string, Record<string, unknown>, string][] = [
  ["version a string", { version: "2" }, "field version"],
  ["bootId not a uuid", { bootId: "x".repeat(64) }, "field bootId"],
  ["pid 0", { pid: 0 }, "field pid"],
  ["pid past pid_max", { pid: 1 << 23 }, "field pid"],
  ["pid not an integer", { pid: 1.5 }, "field pid"],
  ["fabric listed twice", { fabrics: ["shm", "shm"] }, "field fabrics"],
  ["unknown fabric", { fabrics: ["tcp"] }, "field fabrics.0"],
  ["too many fabrics", { fabrics: ["shm", "verbs", "urma", "shm"] }, "field fabrics"],
  ["objectSlabs 0", { region: { objectSlabs: 0 } }, "field region.objectSlabs"],
  ["slots 0", { region: { slots: 0 } }, "field region.slots"],
  ["slots 2^17", { region: { slots: 1 << 17 } }, "field region.slots"],
  ["slotSize not a multiple of 64", { region: { slotSize: 4097 } }, "field region.slotSize"],
  ["slotSize 1 TiB", { region: { slotSize: 2 ** 40 } }, "field region.slotSize"],
  ["objectSlabSize 0", { region: { objectSlabSize: 0 } }, "field region.objectSlabSize"],
  ["bulkSize negative", { region: { bulkSize: -64 } }, "field region.bulkSize"],
  ["stagingSize tiny", { region: { stagingSize: 64 } }, "field region.stagingSize"],
  ["unknown region key", { region: { rings: 3 } }, "region"],
  ["params for no fabric", { params: { tcp: {} } }, "field params"],
  ["unknown simulate key", { simulate: { crash: true } }, "field simulate"],
  ["unknown top-level key", { extra: 1 }, "client hello"],
  ["region a string", { region: "big" }, "field region"],
];

test("every Hello field out of range is refused naming the field; nothing is taken", async () => {
  const server = await start();
  const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
  try {
    await sendHello(ch, validHello()).then(() => ch.call(FABRIC_SERVICE, "Ack", encodeAck(0)));
    const base = held();
    for (const [what, patch, field] of BAD_FIELDS) {
      const e = await assertRejects(
        () => sendHello(ch, { ...validHello(), ...patch }),
        RpcError,
        field,
      );
      assert(e.message.includes("client hello"), `${what}: ${e.message}`);
      assertEquals(server.fabric!.history.at(-1)?.state, "FAILED", what);
      assertHeld(held(), base, what);
    }
    const junk = await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Hello", enc.encode("{not json")),
      RpcError,
      "not JSON",
    );
    assert(junk.message.includes("client hello"), junk.message);
    assertEquals(server.fabric!.sessions.size, 0);
    await stillServes(server);
  } finally {
    await ch.close();
    await server.close();
  }
}, { skip: SKIP });

/** The counts of {@link held} as a record (fds may only go down). */
const counts = (sim?: UrmaLib) => () => ({ ...held(sim) });

test("shm: each end of a pending handshake releases its object, mapping and fds", async () => {
  await endingsRelease({
    label: "shm",
    host: "127.0.0.1",
    fabric: { fabrics: ["shm"] },
    client: {},
    want: "shm",
    hello: () => Promise.resolve({ fabrics: ["shm"], params: { shm: {} } }),
    release: () => {},
    count: counts(),
  });
}, { skip: SKIP, timeoutMs: 60_000 });

test(
  "urma (simulated): each end of a pending handshake releases every simulator object",
  async () => {
    const sim = await loadSim();
    let provider: ClientFabricProvider | null = null;
    await endingsRelease({
      label: "urma",
      host: "127.0.0.1",
      fabric: { fabrics: ["urma"], providerOptions: SIM },
      client: { fabric: "urma", providerOptions: SIM },
      want: "urma (simulated)",
      hello: async () => {
        const p = await createClientProvider({ library: SIM_PATH });
        if (typeof p === "string") throw new Error(p);
        provider = p;
        return { fabrics: ["urma"], params: { urma: p.params() } };
      },
      release: () => provider?.close(),
      count: counts(sim),
      detail: () => sim.liveObjects()?.detail ?? "",
      refillsInBackground: true,
    });
  },
  { skip: SKIP_NO_SIM || SKIP, timeoutMs: 90_000 },
);

test("an ACK after a second Hello never confirms the first Hello's offer", async () => {
  const server = await start();
  const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
  try {
    const base = held();
    const first = await sendHello(ch, validHello());
    assertEquals(first.fabric, "shm");
    const second = await sendHello(ch, { ...validHello(), fabrics: [] });
    assertEquals(second.fabric, null, "the second Hello offers nothing");
    assertEquals(
      server.fabric!.handshakesInProgress,
      0,
      "the first offer ended with the second Hello",
    );
    await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON)),
      RpcError,
      "without a pending fabric hello",
    );
    assertEquals(server.fabric!.sessions.size, 0);
    assertHeld(await settleTo(base), base, "after the second Hello");
  } finally {
    await ch.close();
    await server.close();
  }
}, { skip: SKIP });

test(
  "two Hellos at once on one connection: the later one's offer is the one left pending",
  async () => {
    const server = await start();
    const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
    try {
      const base = held();
      const [a, b] = await Promise.all([sendHello(ch, validHello()), sendHello(ch, validHello())]);
      const live = (r: typeof a) =>
        r.fabric !== null && sessionObjectLive((r.offer as ShmOffer).name);
      assertEquals(server.fabric!.handshakesInProgress, 1);
      assert(
        live(b) && !live(a),
        `the second Hello's offer stays: ${JSON.stringify([a.fabric, b.fabric])}`,
      );
      await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
      assertHeld(await settleTo(base), base, "after both");
    } finally {
      await ch.close();
      await server.close();
    }
  },
  { skip: SKIP },
);

test(
  "a Hello storm on one connection: no listener, history entry or log line per Hello stays",
  async () => {
    const warnings: string[] = [];
    const server = await start({ historyLength: 16 }, warnings);
    const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
    // Count the abort listeners added and removed while the storm runs.
    const proto = EventTarget.prototype;
    const add = proto.addEventListener, remove = proto.removeEventListener;
    let net = 0;
    proto.addEventListener = function (this: EventTarget, type: string, ...rest: unknown[]) {
      if (type === "abort") net++;
      return (add as (...a: unknown[]) => void).call(this, type, ...rest);
    } as typeof add;
    proto.removeEventListener = function (this: EventTarget, type: string, ...rest: unknown[]) {
      if (type === "abort") net--;
      return (remove as (...a: unknown[]) => void).call(this, type, ...rest);
    } as typeof remove;
    try {
      const base = held();
      for (let i = 0; i < 200; i++) await sendHello(ch, validHello());
      await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
      for (let i = 0; i < 200; i++) {
        await sendHello(ch, { ...validHello(), fabrics: [] }); // refused every time
      }
      assert(net <= 4, `abort listeners left after 400 Hellos: ${net}`);
      assertEquals(server.fabric!.history.length, 16, "history keeps the last historyLength");
      assert(
        warnings.length <= 4,
        `log lines for 400 Hellos: ${warnings.length}\n${warnings.join("\n")}`,
      );
      assertHeld(await settleTo(base), base, "after the storm");
    } finally {
      proto.addEventListener = add;
      proto.removeEventListener = remove;
      await ch.close();
    }
    await stillServes(server);
    await server.close();
  },
  { skip: SKIP, timeoutMs: 60_000 },
);

test("maxHandshakes: Hellos past it stay on TCP with the reason, logged once", async () => {
  const warnings: string[] = [];
  const server = await start({ maxHandshakes: 2 }, warnings);
  const chans = await Promise.all(
    [0, 1, 2, 3, 4].map(() => connectChannel({ host: "127.0.0.1", port: server.port })),
  );
  try {
    assertEquals((await sendHello(chans[0], validHello())).fabric, "shm");
    assertEquals((await sendHello(chans[1], validHello())).fabric, "shm");
    for (const ch of chans.slice(2)) {
      const r = await sendHello(ch, validHello());
      assertEquals(r.fabric, null);
      assert(r.decisions.shm?.reason?.includes("maxHandshakes 2"), JSON.stringify(r.decisions));
    }
    assertEquals(
      warnings.filter((w) => w.includes("maxHandshakes")).length,
      1,
      warnings.join("\n"),
    );
    assertEquals(server.fabric!.handshakesInProgress, 2);
    await chans[0].call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
    assertEquals((await sendHello(chans[4], validHello())).fabric, "shm", "room again below it");
    const r = await chans[2].call("t.S", "Echo", enc.encode("tcp"));
    assertEquals(new TextDecoder().decode(r.response), "tcp");
  } finally {
    for (const ch of chans) await ch.close();
    await server.close();
  }
}, { skip: SKIP });

test("maxSessions: a client past it is served over TCP; a freed place is taken again", async () => {
  const warnings: string[] = [];
  const server = await start({ maxSessions: 1 }, warnings);
  const opts = { region: SMALL, logger: { warn: () => {} } };
  try {
    const a = await connect({ host: "127.0.0.1", port: server.port }, opts);
    const b = await connect({ host: "127.0.0.1", port: server.port }, opts);
    assertEquals(a.fabric, "shm");
    assertEquals(b.fabric, "tcp");
    assert(JSON.stringify(b.handshake).includes("maxSessions 1"), JSON.stringify(b.handshake));
    assertEquals((await b.call("t.S", "Echo", enc.encode("b"))).path, "TCP_FALLBACK");
    assertEquals((await a.call("t.S", "Echo", enc.encode("a"))).path, "EAGER");
    await a.close();
    await b.close();
    await until("the session closed", () => server.fabric!.sessions.size === 0);
    await sleep(10);
    await stillServes(server);
    assertEquals(warnings.filter((w) => w.includes("maxSessions")).length, 1, warnings.join("\n"));
  } finally {
    await server.close();
  }
}, { skip: SKIP });
