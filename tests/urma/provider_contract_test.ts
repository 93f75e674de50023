/**
 * The URMA providers driven through the fabric contract (transport/provider.ts) directly, on
 * the simulated liburma: `refuse` → `offer` → client `open` → server `connect` yields two
 * connected endpoints that move bytes both ways (write, writeSg, writeU32, read) and wake each
 * other (kick / waitInbound); a wrong nonce, a stamp that does not match and lying offer fields
 * fail with HANDSHAKE naming what is wrong, after releasing everything; `abort()` before
 * connect releases every simulator object and is safe twice; the faults port breaks an
 * endpoint on purpose.
 */
import { readFileSync } from "node:fs";
import { assert, assertEquals, assertRejects, assertThrows, test } from "../harness.ts";
import { VerbusError } from "../../errors.ts";
import { FABRIC_HEADER } from "../../transport/control_page.ts";
import { Completions, type FabricEndpoint, FAILED, OK, SIGNALED } from "../../transport/fabric.ts";
import type { FaultKind } from "../../transport/faults.ts";
import type {
  ClientFabricProvider,
  PeerInfo,
  ServerFabricProvider,
  SessionSizes,
} from "../../transport/provider.ts";
import { URMA_CR } from "../../transport/urma/errors.ts";
import { createClientProvider, createServerProvider } from "../../transport/urma/provider.ts";
import { loadSim, pattern, sessionObjects, SIM_PATH, SKIP_NO_SIM } from "./util.ts";

const sizes: SessionSizes = { server: 64 << 10, client: 32 << 10, maxMessage: 4096 };
const peer: PeerInfo = {
  bootId: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
  pid: 1,
  host: "127.0.0.1",
};

async function providers(mode: "RM" | "RC" = "RM"): Promise<{
  server: ServerFabricProvider;
  client: ClientFabricProvider;
  log: string[];
}> {
  const log: string[] = [];
  const server = await createServerProvider({ library: SIM_PATH, mode }, (l) => log.push(l));
  const client = await createClientProvider({ library: SIM_PATH, mode });
  if (typeof server === "string") throw new Error(server);
  if (typeof client === "string") throw new Error(client);
  return { server, client, log };
}

/** Both endpoints of one session, connected through the contract. */
async function pair(mode: "RM" | "RC" = "RM") {
  const { server, client } = await providers(mode);
  const params = client.params();
  assertEquals(server.refuse(peer, params), undefined);
  const offer = await server.offer({ sessionId: 1, sizes, peer, params });
  const clientEp = await client.open(offer.offer, sizes);
  const serverEp = await offer.connect();
  offer.abort("no-op after connect");
  return { server, client, offer, clientEp, serverEp };
}

/** Polls `ep` until the completion of `wrId` arrives (or ~2 s pass); its status, or null. */
async function completion(ep: FabricEndpoint, wrId: number): Promise<number | null> {
  const out = new Completions(16);
  const end = Date.now() + 2000;
  while (Date.now() < end) {
    const n = ep.poll(out);
    for (let i = 0; i < n; i++) if (out.wrId[i] === wrId) return out.status[i];
    await new Promise((r) => setTimeout(r, 1));
  }
  return null;
}

async function settledLive(live: () => number, want: number): Promise<number> {
  const end = Date.now() + 3000;
  while (live() !== want && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  return live();
}

test(
  "refuse: bad parameters, another host (simulator) and a mode mismatch are named",
  async () => {
    const { server, client, log } = await providers();
    try {
      assert(log.some((l) => l.includes("SIMULATED liburma")), log.join("\n"));
      assertEquals(client.label, "urma (simulated)");
      const params = client.params() as Record<string, unknown>;
      assertEquals(server.refuse(peer, params), undefined);
      const bad = server.refuse(peer, { ...params, token: -1 });
      assert(bad?.includes("client urma parameters: field token"), String(bad));
      const far = server.refuse({ ...peer, bootId: "another-host" }, params);
      assert(far?.includes("boot ids differ"), String(far));
      const rc = server.refuse(peer, { ...params, mode: "RC" });
      assert(rc?.includes("mode RC requested, the server runs RM"), String(rc));
    } finally {
      client.close();
      client.close();
      server.close();
    }
  },
  { skip: SKIP_NO_SIM },
);

for (const mode of ["RM", "RC"] as const) {
  test(
    `${mode}: offer → open → connect yields connected endpoints that move bytes and wake each other`,
    async () => {
      const u = await loadSim();
      const live = () => sessionObjects(u);
      const base = live();
      const { server, client, clientEp, serverEp } = await pair(mode);
      try {
        assertEquals([clientEp.kind, clientEp.simulated, clientEp.failed], ["urma", true, false]);
        assertEquals([clientEp.local.length, clientEp.remoteSize], [sizes.client, sizes.server]);
        assertEquals([serverEp.local.length, serverEp.remoteSize], [sizes.server, sizes.client]);
        // client → server: a bounced write, then a publication word
        const body = pattern(new Uint8Array(3000), 5);
        assertEquals(clientEp.write(1, 4096, body, SIGNALED), OK);
        assertEquals(clientEp.writeU32(2, 8192, 0xdead_beef, SIGNALED), OK);
        clientEp.flush();
        assertEquals(await completion(clientEp, 2), 0);
        assertEquals(serverEp.local.subarray(4096, 7096), body);
        assertEquals(
          new DataView(serverEp.local.buffer).getUint32(serverEp.local.byteOffset + 8192, true),
          0xdead_beef,
        );
        // server → client: a gather from its region, then the client reads it back
        pattern(serverEp.local.subarray(10_000, 10_100), 7);
        pattern(serverEp.local.subarray(20_000, 20_050), 8);
        const sg = [
          serverEp.local.subarray(10_000, 10_100),
          serverEp.local.subarray(20_000, 20_050),
        ];
        assertEquals(serverEp.writeSg(3, 1000, sg, 2, SIGNALED), OK);
        serverEp.flush();
        assertEquals(await completion(serverEp, 3), 0);
        assertEquals(clientEp.local.subarray(1000, 1100), sg[0]);
        assertEquals(clientEp.local.subarray(1100, 1150), sg[1]);
        const dst = clientEp.local.subarray(2000, 5000);
        assertEquals(clientEp.read(4, dst, 4096, SIGNALED), OK);
        clientEp.flush();
        assertEquals(await completion(clientEp, 4), 0);
        assertEquals(dst, body);
        // kick / waitInbound: the server sleeps until the client kicks
        const seen = serverEp.doorbell();
        const t0 = performance.now();
        const woken = serverEp.waitInbound(seen, 2000);
        setTimeout(() => clientEp.kick(), 20);
        assertEquals(await woken, true);
        assert(performance.now() - t0 < 1000, "woken by the kick, not the timeout");
        assert(serverEp.doorbell() !== seen, "the doorbell moved");
        const header = new DataView(serverEp.local.buffer, serverEp.local.byteOffset);
        assertEquals(header.getUint32(FABRIC_HEADER.sleeping, true), 0, "awake again");
        assertEquals([clientEp.failed, serverEp.failed], [false, false]);
      } finally {
        clientEp.close();
        clientEp.close();
        serverEp.close();
        serverEp.close();
        client.close();
        server.close();
      }
      assertEquals(await settledLive(live, base), base, u.liveObjects()!.detail);
    },
    { skip: SKIP_NO_SIM },
  );
}

test(
  "a wrong nonce or a stamp that does not match fails with HANDSHAKE, releasing everything",
  async () => {
    const u = await loadSim();
    const live = () => sessionObjects(u);
    const base = live();
    // the client got another nonce: the server's header does not carry it
    {
      const { server, client } = await providers();
      const params = client.params();
      const offer = await server.offer({ sessionId: 1, sizes, peer, params });
      const lying = { ...(offer.offer as Record<string, unknown>), nonce: "cd".repeat(16) };
      await assertRejects(
        () => client.open(lying, sizes),
        VerbusError,
        "the server's region header: the peer region holds another session's nonce",
      );
      await assertRejects(() => client.open(offer.offer, sizes), VerbusError, "already used");
      offer.abort("no ACK");
      client.close();
      server.close();
    }
    assertEquals(await settledLive(live, base), base, u.liveObjects()!.detail);
    // the client's header changed after it connected: the server's check fails and releases
    {
      const { server, client } = await providers();
      const params = client.params();
      const offer = await server.offer({ sessionId: 1, sizes, peer, params });
      const clientEp = await client.open(offer.offer, sizes);
      clientEp.local[FABRIC_HEADER.proof] ^= 0xff;
      const e = await assertRejects(
        () => offer.connect(),
        VerbusError,
        "urma proof: the client's region header: the peer region holds another session's nonce",
      );
      assertEquals(e.code, "HANDSHAKE");
      offer.abort("after a failed connect");
      clientEp.close();
      client.close();
      server.close();
    }
    assertEquals(await settledLive(live, base), base, u.liveObjects()!.detail);
  },
  { skip: SKIP_NO_SIM },
);

test(
  "lying offer fields (sizes, mode, token, segment) fail with HANDSHAKE naming them",
  async () => {
    const u = await loadSim();
    const live = () => sessionObjects(u);
    const base = live();
    const { server, client: unused } = await providers();
    unused.close();
    try {
      const cases: [(o: Record<string, unknown>) => Record<string, unknown>, string][] = [
        [(o) => ({ ...o, v: 1 }), "urma offer: field v"],
        [(o) => ({ ...o, clientSize: sizes.client + 4096 }), "disagree with the negotiated sizes"],
        [(o) => ({ ...o, mode: "RC" }), "urma offer mode RC, this client runs RM"],
        [(o) => ({ ...o, nonce: "xyz" }), "urma offer: field nonce"],
        [(o) => ({ ...o, token: ((o.token as number) ^ 1) >>> 0 }), "URMA_CR_REM_ACCESS_ABORT_ERR"],
        [(o) => ({ ...o, seg: "00".repeat(48) }), "server segment covers 0 bytes"],
      ];
      for (const [lie, want] of cases) {
        const client = await createClientProvider({ library: SIM_PATH });
        if (typeof client === "string") throw new Error(client);
        const offer = await server.offer({ sessionId: 1, sizes, peer, params: client.params() });
        try {
          const e = await assertRejects(
            () => client.open(lie(offer.offer as Record<string, unknown>), sizes),
            VerbusError,
            want,
          );
          assertEquals(e.code, "HANDSHAKE", e.message);
        } finally {
          offer.abort("lying offer");
          client.close();
        }
      }
      await assertRejects(
        () => server.offer({ sessionId: 2, sizes, peer, params: { v: 3 } }),
        VerbusError,
        "client urma parameters: field jetty",
      );
    } finally {
      server.close();
    }
    assertEquals(await settledLive(live, base), base, u.liveObjects()!.detail);
  },
  { skip: SKIP_NO_SIM },
);

test(
  "abort() before connect releases every simulator object, is safe twice; connect() after it fails",
  async () => {
    const u = await loadSim();
    const live = () => sessionObjects(u);
    const base = live();
    const { server, client } = await providers();
    const withClientPort = live();
    assert(withClientPort > base, "the client's port is open for its hello");
    const offer = await server.offer({ sessionId: 1, sizes, peer, params: client.params() });
    assert(live() > withClientPort, "the offer holds the server's side");
    offer.abort("no ACK");
    assertEquals(live(), withClientPort, u.liveObjects()!.detail);
    offer.abort("again");
    assertEquals(live(), withClientPort);
    await assertRejects(() => offer.connect(), VerbusError, "already released");
    client.close();
    client.close();
    server.close();
    assertEquals(live(), base, u.liveObjects()!.detail);
  },
  { skip: SKIP_NO_SIM },
);

test(
  "faults port: fail, bad-remote-key and out-of-bounds break the endpoint as named",
  async () => {
    const u = await loadSim();
    const live = () => sessionObjects(u);
    const base = live();
    for (const kind of ["fail", "bad-remote-key", "out-of-bounds"] as FaultKind[]) {
      const { server, client, clientEp, serverEp } = await pair();
      try {
        assertEquals(clientEp.faults.supported, [
          "bad-remote-key",
          "out-of-bounds",
          "fail",
          "fail-next-write",
        ]);
        clientEp.faults.inject(kind, "broken on purpose");
        if (kind === "fail") {
          assertEquals([clientEp.failed, clientEp.failureReason], [true, "broken on purpose"]);
          assertEquals(clientEp.write(1, 0, new Uint8Array(8), SIGNALED), FAILED);
        } else {
          assertEquals(clientEp.write(1, 4096, new Uint8Array(8), SIGNALED), OK);
          clientEp.flush();
          assertEquals(await completion(clientEp, 1), URMA_CR.REM_ACCESS_ABORT_ERR, kind);
          assert(clientEp.failed, kind);
          assert(
            clientEp.failureReason!.includes("URMA_CR_REM_ACCESS_ABORT_ERR"),
            `${kind}: ${clientEp.failureReason}`,
          );
        }
        assert(!serverEp.failed, "the peer is untouched");
        assertThrows(
          () => clientEp.faults.inject("melt" as FaultKind),
          VerbusError,
          'cannot inject the fault "melt"',
        );
      } finally {
        clientEp.close();
        serverEp.close();
        client.close();
        server.close();
      }
    }
    assertEquals(await settledLive(live, base), base, u.liveObjects()!.detail);
  },
  { skip: SKIP_NO_SIM },
);
