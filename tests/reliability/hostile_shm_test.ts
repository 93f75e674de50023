/**
 * Hostile shared memory. Another process of the same user opens a pending session's memfd and
 * tries to truncate, grow, unlink or re-seal it (all refused: the seals hold); a hostile client
 * scribbles over the server's control page and request descriptors (its session may fail, the
 * server and the other sessions live); a hostile server offers an unsealed or short object (the
 * client refuses before it maps); a client killed mid-call leaves nothing behind.
 * @module
 */
import { connect as connectChannel } from "../../rpc/tcp/channel.ts";
import { connect } from "../../rpc/client/client.ts";
import { serve, type Server } from "../../rpc/server/server.ts";
import { ACK_ON, encodeAck, FABRIC_SERVICE } from "../../rpc/session/handshake/hello.ts";
import { computeLayout } from "../../rpc/region/layout.ts";
import { errno, loadLibc } from "../../ffi/libc.ts";
import { cstringArg } from "../../ffi/strings.ts";
import { F_ADD_SEALS, MFD_ALLOW_SEALING, MFD_CLOEXEC, O_RDWR } from "../../ffi/symbols/libc.ts";
import { VerbusError } from "../../errors.ts";
import { hostBootId } from "../../transport/host.ts";
import type { ShmOffer } from "../../transport/shm/handshake.ts";
import { createClientProvider, createServerProvider } from "../../transport/shm/provider.ts";
import { ShmMapping } from "../../transport/shm/shm_object.ts";
import { assert, assertEquals, assertRejects, test } from "../harness.ts";
import { otherRuntime, spawnScript } from "../util/proc.ts";
import { liveSessionObjects } from "../util/shm.ts";
import { fdTargets, held, sendHello, settleTo, until, validHello, within } from "./util.ts";

const SMALL = {
  slots: 16,
  slotSize: 4096,
  bulkSize: 1 << 16,
  objectSlabs: 4,
  objectSlabSize: 65536,
  stagingSize: 1 << 16,
};
const enc = new TextEncoder();
const EPERM = 1, ENOENT = 2, EBUSY = 16;

async function start(): Promise<{ server: Server; warnings: string[] }> {
  const warnings: string[] = [];
  const server = await serve({
    port: 0,
    host: "127.0.0.1",
    services: { "t.S": { Echo: (req: Uint8Array) => req } },
    fabric: { fabrics: ["shm"], region: SMALL },
    logger: { warn: (m) => warnings.push(m), info: () => {} },
  });
  return { server, warnings };
}

async function echoes(server: Server, label: string): Promise<void> {
  const c = await connect({ host: "127.0.0.1", port: server.port }, {
    region: SMALL,
    logger: { warn: () => {} },
  });
  try {
    assertEquals(c.fabric, "shm", `${label}: ${JSON.stringify(c.handshake)}`);
    const r = await c.call("t.S", "Echo", enc.encode(label));
    assertEquals([r.path, new TextDecoder().decode(r.response)], ["EAGER", label]);
  } finally {
    await c.close();
  }
}

test("another process cannot truncate, grow, unlink or re-seal a pending session's memfd", async () => {
  const libc = await loadLibc();
  const s = libc.symbols;
  const { server } = await start();
  const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
  try {
    const reply = await sendHello(ch, validHello());
    const offer = reply.offer as ShmOffer;
    assertEquals(reply.fabric, "shm");
    // What a same-user attacker can do: open the memfd the way the client does.
    const fd = s.open(cstringArg(`/proc/${offer.pid}/fd/${offer.fd}`), O_RDWR, 0);
    assert(fd >= 0, `the attacker opens it (errno ${errno(libc)})`);
    try {
      assertEquals(
        [s.ftruncate(fd, 0), errno(libc)],
        [-1, EPERM],
        "shrink refused (F_SEAL_SHRINK)",
      );
      assertEquals([s.ftruncate(fd, offer.size * 2), errno(libc)], [-1, EPERM], "grow refused");
      assertEquals(s.fcntl(fd, F_ADD_SEALS, 8 /* F_SEAL_WRITE */), -1, "no new seal (F_SEAL_SEAL)");
      assert([EPERM, EBUSY].includes(errno(libc)), `errno ${errno(libc)}`);
      assertEquals(
        [s.shm_unlink(cstringArg(offer.name)), errno(libc)],
        [-1, ENOENT],
        "there is no name to unlink",
      );
    } finally {
      s.close(fd);
    }
    // The session still comes up: the real client maps it, stamps it and ACKs.
    const provider = await createClientProvider({});
    if (typeof provider === "string") throw new Error(provider);
    const sizes = {
      server: computeLayout("server", reply.region).size,
      client: computeLayout("client", reply.region).size,
      maxMessage: reply.region.slotSize,
    };
    const endpoint = await provider.open(reply.offer, sizes);
    await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON));
    assertEquals(server.fabric!.sessions.size, 1, "established despite the attacker");
    endpoint.close();
    await echoes(server, "after the attack");
  } finally {
    await ch.close();
    await server.close();
  }
});

/** A hostile client's session: established by hand, so the test holds the raw endpoint. */
async function hostileSession(server: Server) {
  const ch = await connectChannel({ host: "127.0.0.1", port: server.port });
  const reply = await sendHello(ch, validHello(["shm"], { shm: {} }, SMALL));
  const provider = await createClientProvider({});
  if (typeof provider === "string") throw new Error(provider);
  const layout = computeLayout("server", reply.region);
  const sizes = {
    server: layout.size,
    client: computeLayout("client", reply.region).size,
    maxMessage: reply.region.slotSize,
  };
  const endpoint = await provider.open(reply.offer, sizes);
  await ch.call(FABRIC_SERVICE, "Ack", encodeAck(ACK_ON));
  return { ch, endpoint, layout };
}

test("a client scribbling on the server's control page and descriptors: server and others live", async () => {
  const { server, warnings } = await start();
  const bystander = await connect({ host: "127.0.0.1", port: server.port }, {
    region: SMALL,
    logger: { warn: () => {} },
  });
  try {
    assertEquals(bystander.fabric, "shm");
    const patterns: [string, (i: number) => number][] = [
      ["random", () => (Math.random() * 256) | 0],
      ["all ones", () => 0xff],
      ["counting", (i) => i & 0xff],
    ];
    for (const [what, byte] of patterns) {
      const base = held(), fdsBefore = fdTargets();
      const { ch, endpoint, layout } = await hostileSession(server);
      const garbage = new Uint8Array(layout.requestRing.offset + layout.requestRing.size)
        .map((_, i) => byte(i));
      // Over the control page and the request descriptors (past the fabric header).
      for (let off = 64; off < garbage.length; off += 4096) {
        endpoint.write(1, off, garbage.subarray(off, Math.min(off + 4096, garbage.length)), 0);
      }
      endpoint.flush();
      endpoint.kick();
      for (let i = 0; i < 20; i++) {
        const r = await bystander.call("t.S", "Echo", enc.encode(`${what} ${i}`));
        assertEquals([r.path, new TextDecoder().decode(r.response)], ["EAGER", `${what} ${i}`]);
      }
      endpoint.close();
      await ch.close();
      await until(`${what}: the hostile session to end`, () => server.fabric!.sessions.size === 1);
      const now = await settleTo(base);
      const extra = fdTargets().filter((f) => !fdsBefore.includes(f));
      assert(
        within(now, base),
        `${what}: ${JSON.stringify(now)} vs ${JSON.stringify(base)}: ${extra}`,
      );
    }
    assert(warnings.length <= 3, warnings.join("\n"));
    await echoes(server, "after the scribbling");
  } finally {
    await bystander.close();
    await server.close();
  }
});

test("a hostile server's offer: not sealed, too short or not there is refused before mapping", async () => {
  const libc = await loadLibc();
  const s = libc.symbols;
  const client = await createClientProvider({});
  const sp = await createServerProvider(undefined, () => {});
  if (typeof client === "string" || typeof sp === "string") throw new Error("no shm here");
  const sizes = { server: 8192, client: 8192, maxMessage: 4096 };
  const real = await sp.offer({
    sessionId: 990_001,
    sizes,
    peer: { bootId: hostBootId(), pid: 1, host: "127.0.0.1" },
    params: {},
  });
  const good = real.offer as ShmOffer;
  // An unsealed memfd of the right size: the server could shrink it under the client.
  const loose = s.memfd_create(cstringArg("verbus-hostile"), MFD_CLOEXEC | MFD_ALLOW_SEALING);
  s.ftruncate(loose, 16384);
  // A sealed object smaller than the offer says.
  const short = await ShmMapping.createSealed("/verbus-1-990002", 8192);
  const base = held();
  try {
    const me = (globalThis as { process?: { pid: number } }).process!.pid;
    const cases: [string, ShmOffer, string][] = [
      ["unsealed", { ...good, pid: me, fd: loose }, "not a sealed memfd"],
      ["short", { ...good, pid: me, fd: short.fd }, "has 8192 bytes, the offer says 16384"],
      ["no such fd", { ...good, pid: me, fd: 999_999 }, "cannot map"],
      ["no such process", { ...good, pid: 4_000_000 }, "cannot map"],
    ];
    for (const [what, offer, says] of cases) {
      const e = await assertRejects(() => client.open(offer, sizes), VerbusError, says);
      assertEquals(e.code, "HANDSHAKE", what);
    }
    const now = held();
    assertEquals(now.maps, base.maps, "nothing was mapped");
    assert(
      now.fds <= base.fds + 2,
      `no fd left open: ${JSON.stringify(now)} vs ${JSON.stringify(base)}`,
    );
  } finally {
    s.close(loose);
    short.close();
    real.abort("test over");
  }
  assertEquals(liveSessionObjects().size, 0, "every object released");
});

test(
  `a ${otherRuntime()} client killed mid-call: session, memfd and fds released; others served`,
  async () => {
    const { server } = await start();
    const base = held();
    const child = await spawnScript(otherRuntime(), "tests/fixtures/fabric_client.ts", {
      args: ["--port", String(server.port)],
    });
    try {
      await until("the child's session", () => server.fabric!.sessions.size === 1);
      await new Promise((r) => setTimeout(r, 200)); // calls in flight
      await child.kill("SIGKILL");
      await until("its session to be closed", () => server.fabric!.sessions.size === 0);
      const now = await settleTo(base);
      assert(within(now, base), `held ${JSON.stringify(now)} vs ${JSON.stringify(base)}`);
      await echoes(server, "after the kill");
    } finally {
      await child.kill();
      await server.close();
    }
  },
  { timeoutMs: 30_000 },
);
