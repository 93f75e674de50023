/**
 * A server session whose endpoint fails on its own (issue 12) tells its client: the fault door
 * breaks only the server's endpoint of one session (`fail`: as a fabric error; on simulated URMA
 * also `bad-remote-key`: the server's writes complete with a remote access error). The client
 * learns over TCP (`verbus.Fabric/Watch` is answered): a call in flight the server never took is
 * redone over TCP exactly once, one it took (and ran) fails with a clear FABRIC error — neither
 * waits for its deadline —, an idle client learns without calling, later
 * calls go over TCP and then over a re-negotiated session, and another session keeps working.
 * Both runtimes, shm and simulated URMA.
 * @module
 */
import process from "node:process";
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { connect } from "../../rpc/client/client.ts";
import {
  byeSchema,
  decodeHello,
  encodeBye,
  FABRIC_SERVICE,
} from "../../rpc/session/handshake/hello.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import type { ServerSession } from "../../rpc/session/server/server_session.ts";
import type { FaultKind } from "../../transport/faults.ts";
import { SIM_PATH, SKIP_NO_SIM } from "../urma/util.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { until } from "./util.ts";

const SIM = { urma: { library: SIM_PATH } };
const DEADLINE = 20_000;
const enc = new TextEncoder();
/** VERBUS_TEST_VERBOSE=1 prints how long each client took to learn (for bench/results). */
const VERBOSE = process.env.VERBUS_TEST_VERBOSE === "1";

type Kind = "shm" | "urma";
/** How often the server ran Echo for each payload (no call may run twice). */
const ran = new Map<string, number>();

async function start(kind: Kind): Promise<Server> {
  return await serve({
    port: 0,
    host: "127.0.0.1",
    services: {
      "t.N": {
        Echo: (req: Uint8Array) => {
          const k = new TextDecoder().decode(req);
          ran.set(k, (ran.get(k) ?? 0) + 1);
          return req.slice();
        },
      },
    },
    fabric: { fabrics: [kind], ...(kind === "urma" ? { providerOptions: SIM } : {}) },
    logger: { warn: () => {}, info: () => {} },
  });
}

async function client(server: Server, kind: Kind) {
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    fabric: kind,
    ...(kind === "urma" ? { providerOptions: SIM } : {}),
    reestablishMs: 200,
    timeoutMs: DEADLINE,
    logger: { warn: () => {} },
  });
  assertEquals(c.fabric, kind === "urma" ? "urma (simulated)" : "shm", JSON.stringify(c.handshake));
  return c;
}

/** The server session that appeared since `known` (the one of the client just connected). */
function newSession(server: Server, known: Set<ServerSession>): ServerSession {
  const s = [...server.fabric!.sessions].find((x) => !known.has(x));
  assert(s !== undefined, "the new client has a server session");
  known.add(s);
  return s;
}

async function echo(c: Awaited<ReturnType<typeof client>>, text: string) {
  const r = await c.call("t.N", "Echo", enc.encode(text), { timeoutMs: DEADLINE });
  assertEquals(new TextDecoder().decode(r.response), text);
  return r;
}

function scenario(kind: Kind, fault: FaultKind, idle: boolean): void {
  test(
    `${kind}: the server's endpoint of one session fails (${fault}); its client learns ${
      idle ? "while idle" : "with a call in flight"
    }, fails over, re-negotiates; the other session is untouched`,
    async () => {
      const server = await start(kind);
      const known = new Set<ServerSession>();
      const a = await client(server, kind);
      const sa = newSession(server, known);
      const b = await client(server, kind);
      newSession(server, known);
      try {
        await echo(a, "warm a");
        assertEquals((await echo(b, "warm b")).path, "EAGER");
        const label = a.fabric;
        sa.endpoint.faults.inject(fault, "injected into the server's endpoint only");
        const t0 = performance.now();
        if (idle) {
          // No call: the server notices its endpoint on its tick and says so over TCP.
          await until(
            "the idle client learns its session failed",
            () => a.fabric === "tcp",
            10_000,
          );
          const ms = Math.round(performance.now() - t0);
          if (VERBOSE) console.log(`  ${kind}/${fault}: the idle client learned after ${ms} ms`);
        } else {
          const payload = `in flight ${kind} ${fault}`;
          const outcome = await a.call("t.N", "Echo", enc.encode(payload), {
            timeoutMs: DEADLINE,
          }).then((r) => ({ ok: true as const, r }), (e: Error) => ({ ok: false as const, e }));
          const ms = Math.round(performance.now() - t0);
          if (VERBOSE) {
            console.log(
              `  ${kind}/${fault}: the call in flight settled after ${ms} ms: ${
                outcome.ok ? outcome.r.path : outcome.e.message
              }`,
            );
          }
          if (fault === "fail") {
            // The server noticed before it took the request, and said so: redone over TCP, once.
            assert(outcome.ok, `redone over TCP: ${!outcome.ok && outcome.e.message}`);
            assertEquals(outcome.r.path, "TCP_FALLBACK");
            assertEquals(new TextDecoder().decode(outcome.r.response), payload);
            assertEquals(ran.get(payload), 1, "ran exactly once");
          } else {
            // Taken and run, its answer refused: a clear error (not redone: it may have applied).
            assert(!outcome.ok, "not redone");
            assert(
              /fabric session failed: .*server/.test(outcome.e.message) &&
                !/timed out/.test(outcome.e.message),
              `a clear FABRIC error, not the deadline (${ms} ms): ${outcome.e.message}`,
            );
            assertEquals(ran.get(payload), 1, "ran once, not again");
          }
          await until("the client's session is failed", () => a.fabric === "tcp", 10_000);
        }
        assert(sa.closedReason !== null, "the server closed that session");
        // Later calls go over TCP, then over a re-negotiated session.
        const r = await echo(a, "after");
        assert(["TCP_FALLBACK", "EAGER"].includes(r.path), r.path);
        // A call starts the re-negotiation when it is due (200 ms after the failure).
        for (let i = 0; a.fabric !== label; i++) {
          assert(i < 100, `re-negotiated within 10 s: ${JSON.stringify(a.handshake)}`);
          await echo(a, `nudge ${i}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        assertEquals((await echo(a, "again")).path, "EAGER");
        // The other session never noticed.
        assertEquals(b.fabric, label);
        for (let i = 0; i < 20; i++) assertEquals((await echo(b, `b${i}`)).path, "EAGER");
      } finally {
        await a.close();
        await b.close();
        await server.close();
      }
    },
    { skip: kind === "urma" ? SKIP_NO_SIM : false },
  );
}

scenario("shm", "fail", false);
scenario("shm", "fail", true);
scenario("urma", "fail", false);
scenario("urma", "fail", true);
scenario("urma", "bad-remote-key", false);

test("a Watch that comes after its session ended gets that session's notice, not 'no such session'", async () => {
  // The client opens its Watch right after the ACK; a session that breaks at once (an overrun in
  // its first turn) may end before the Watch reaches the server: the notice must still say why.
  const server = await start("shm");
  const known = new Set<ServerSession>();
  const a = await client(server, "shm");
  const sa = newSession(server, known);
  try {
    await echo(a, "warm");
    sa.endpoint.faults.inject("fail", "broken before the late watch");
    await until("the server closed the session", () => sa.closedReason !== null, 10_000);
    const r = await a.channel.call(
      FABRIC_SERVICE,
      "Watch",
      encodeBye({ sessionId: sa.id, reason: "watch" }),
    );
    const notice = decodeHello(byeSchema, r.response, "notice");
    assertEquals(notice.sessionId, sa.id);
    assert(/broken before the late watch/.test(notice.reason), notice.reason);
    const other = await a.channel.call( // another id on this connection: still unknown
      FABRIC_SERVICE,
      "Watch",
      encodeBye({ sessionId: sa.id + 1000, reason: "watch" }),
    );
    assertEquals(
      decodeHello(byeSchema, other.response, "notice").reason,
      "no such session on this connection",
    );
  } finally {
    await a.close();
    await server.close();
  }
});

test("a Watch that is garbage is refused naming it; one for a session the connection lacks is answered at once", async () => {
  const server = await start("shm");
  const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
  try {
    const bad = await ch.call(FABRIC_SERVICE, "Watch", enc.encode("{nope")).then(
      () => null,
      (e: Error) => e.message,
    );
    assert(bad !== null && /client watch/.test(bad), `refused: ${bad}`);
    const r = await ch.call(
      FABRIC_SERVICE,
      "Watch",
      encodeBye({ sessionId: 7, reason: "watch" }),
    );
    assertEquals(
      decodeHello(byeSchema, r.response, "notice").reason,
      "no such session on this connection",
    );
    const c = await client(server, "shm"); // the server still serves
    await echo(c, "alive");
    await c.close();
  } finally {
    await ch.close();
    await server.close();
  }
});
