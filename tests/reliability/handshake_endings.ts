/**
 * Every way a pending fabric handshake can end — ACK 0, ACK 1 without the client's proof, a
 * malformed ACK, no ACK in time, a new (refused) Hello, the connection closed — driven by hand
 * against a real server, counting what the process holds before the Hello and after the end:
 * each must give back all it took. Shared by the host suite (shm, simulated URMA) and the VM suite
 * (verbs: kernel PD / MR / CQ / QP / CM id counts).
 * @module
 */
import { type Channel, connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { type ClientOptions, connect } from "../../rpc/client/client.ts";
import { RpcError } from "../../rpc/errors.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { ACK_OFF, ACK_ON, encodeAck, FABRIC_SERVICE } from "../../rpc/session/handshake/hello.ts";
import type { FabricKind } from "../../transport/registry.ts";
import { assert, assertEquals, assertRejects } from "../harness.ts";
import { fdTargets, sendHello, sleep, until, validHello } from "./util.ts";

/** A small region (many handshakes fit). */
export const SMALL_REGION = {
  slots: 8,
  slotSize: 4096,
  bulkSize: 1 << 16,
  objectSlabs: 2,
  objectSlabSize: 65536,
  stagingSize: 1 << 16,
};

/** One fabric's setting for {@link endingsRelease}. */
export interface EndingsRig {
  readonly label: string;
  /** Where the server listens (and the client connects). */
  readonly host: string;
  /** The server's fabric options (fabrics, providerOptions). */
  readonly fabric: Record<string, unknown>;
  /** Options of the real client that must still get the fabric at the end. */
  readonly client: ClientOptions;
  /** Its `client.fabric`. */
  readonly want: string;
  /** The fabrics and params of a client Hello (may open a client provider: `release` closes it). */
  hello(): Promise<{ fabrics: FabricKind[]; params: Record<string, unknown> }>;
  /** Closes what the last `hello()` opened. */
  release(): void;
  /** The server's ACK timeout (default 300 ms; a slow fabric needs longer). */
  readonly ackTimeoutMs?: number;
  /** What this process holds now; `fds` may only go down, every other count must come back. */
  count(): Record<string, number>;
  /** What the counts are made of, for a failure's message (the simulator's objects by kind). */
  detail?(): string;
  /** The server replaces what a handshake took in the background (urma: its pool of prepared
   * jetties refills on a timer): wait for the counts to hold still before the first ending. */
  readonly refillsInBackground?: boolean;
}

type Counts = Record<string, number>;
const backTo = (now: Counts, base: Counts) =>
  Object.keys(base).every((k) => k === "fds" ? now[k] <= base[k] : now[k] === base[k]);

async function settle(rig: EndingsRig, base: Counts, ms = 5000): Promise<Counts> {
  const end = performance.now() + ms;
  let now = rig.count();
  while (!backTo(now, base) && performance.now() < end) {
    await sleep(20);
    now = rig.count();
  }
  return now;
}

/** Waits until the counts held still for 200 ms (at most 5 s). */
async function steady(rig: EndingsRig): Promise<void> {
  const end = performance.now() + 5000;
  let last = JSON.stringify(rig.count()), since = performance.now();
  while (performance.now() < end && performance.now() - since < 200) {
    await sleep(20);
    const now = JSON.stringify(rig.count());
    if (now !== last) (last = now, since = performance.now());
  }
}

const ENDINGS: [string, (ch: Channel, server: Server) => Promise<void>, RegExp][] = [
  ["ACK 0", async (ch) => {
    await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
  }, /ACK 0/],
  ["ACK 1 without the client's proof", async (ch) => {
    // (The server waits for the proof as long as its fabric allows: verbs, seconds.)
    await assertRejects(
      () => ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON), { timeoutMs: 60_000 }),
      RpcError,
    );
  }, /prov|proof|never connected/],
  ["a malformed ACK", async (ch) => {
    await assertRejects(() => ch.call(FABRIC_SERVICE, "Ack", new Uint8Array(3)), RpcError);
  }, /4 bytes/],
  ["no ACK in time", async (_ch, server) => {
    await until("the ACK timeout", () => server.fabric!.handshakesInProgress === 0, 20_000);
  }, /no ACK in time/],
  ["a new Hello that is refused", async (ch) => {
    await assertRejects(() => sendHello(ch, { ...validHello(), pid: 0 }), RpcError);
  }, /replaced by a new hello/],
  ["the connection closed", async (ch, server) => {
    await ch.close();
    await until("the close", () => server.fabric!.handshakesInProgress === 0);
  }, /connection closed/],
];

/** Runs every ending on `rig`'s fabric; throws naming the ending that kept something. */
export async function endingsRelease(rig: EndingsRig): Promise<void> {
  const detail = () => rig.detail?.() ?? "";
  const server = await serve({
    port: 0,
    host: rig.host,
    services: { "t.S": { Echo: (req: Uint8Array) => req } },
    fabric: { region: SMALL_REGION, ...rig.fabric, ackTimeoutMs: rig.ackTimeoutMs ?? 300 },
    logger: { warn: () => {}, info: () => {} },
  });
  try {
    // One handshake first, unchecked: what a process opens once for all its sessions (a
    // runtime's worker fds, a fabric's shared event channel) is not what a handshake leaks.
    {
      const { fabrics, params } = await rig.hello();
      const ch = await connectChannel({ host: rig.host, port: server.port });
      await sendHello(ch, validHello(fabrics, params, SMALL_REGION));
      await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_OFF));
      await ch.close();
      rig.release();
    }
    // …and what it took may be replaced in the background: the first ending's base must come
    // after that, or it reads one short (urma: a jetty the pool refilled after the base).
    if (rig.refillsInBackground) await steady(rig);
    for (const [what, end, reason] of ENDINGS) {
      const base = rig.count(), fdsBefore = fdTargets(), detailBefore = detail();
      const { fabrics, params } = await rig.hello();
      const ch = await connectChannel({ host: rig.host, port: server.port });
      const connected = JSON.stringify(rig.count());
      const reply = await sendHello(ch, validHello(fabrics, params, SMALL_REGION));
      assertEquals(reply.fabric, fabrics[0], `${rig.label} ${what}: ${JSON.stringify(reply)}`);
      assert(
        JSON.stringify(rig.count()) !== connected,
        `${rig.label} ${what}: the offer took something`,
      );
      await end(ch, server);
      await ch.close();
      rig.release();
      const outcome = server.fabric!.history.find((h) => reason.test(h.reason ?? ""));
      assert(outcome, `${rig.label} ${what}: ${JSON.stringify(server.fabric!.history)}`);
      const now = await settle(rig, base);
      assert(
        backTo(now, base),
        `${rig.label} ${what}: held ${JSON.stringify(now)}, before ${
          JSON.stringify(base)
        }; new fds ` +
          fdTargets().filter((f) => !fdsBefore.includes(f)).join(", ") +
          `; ${detailBefore} → ${detail()}`,
      );
      assertEquals(server.fabric!.handshakesInProgress, 0);
    }
    const c = await connect({ host: rig.host, port: server.port }, {
      region: SMALL_REGION,
      logger: { warn: () => {} },
      ...rig.client,
    });
    try {
      assertEquals(c.fabric, rig.want, JSON.stringify(c.handshake));
      const r = await c.call("t.S", "Echo", new TextEncoder().encode("alive"));
      assertEquals(new TextDecoder().decode(r.response), "alive");
    } finally {
      await c.close();
    }
  } finally {
    await server.close();
  }
}
