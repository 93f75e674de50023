/**
 * `verbus doctor --brpc-ubring HOST:PORT`: this host can make brpc's ring objects, and the server
 * at the address answers over UBRing (the protocol-description peer), stays on TCP (zeroed
 * versions), is no UBRing server (a plain verbus server) or cannot be reached — each said with
 * why. Both runtimes.
 */
import { serve } from "../../rpc/server/server.ts";
import { brpcUbringCapability } from "../../transport/brpc_ubring/probe.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { verbusAsync } from "../util/verbus_cli.ts";
import { logger, ubringObjects } from "./util.ts";
import { startPeerServer } from "./ubring_peer.ts";

const at = (port: number) => ({ host: "127.0.0.1", port });

test(
  "doctor: brpc UBRing usable here; a peer reachable, on TCP, not UBRing, or unreachable",
  async () => {
    assertEquals(await brpcUbringCapability(), { usable: true });
    const good = await startPeerServer();
    const refusing = await startPeerServer({ hello: { helloVer: 0, implVer: 0 } });
    const plain = await serve({ port: 0, services: {}, fabric: false, logger: logger() });
    try {
      const a = await brpcUbringCapability(at(good.port));
      assert(a.peer?.reachable === true, JSON.stringify(a));
      assert(/a UBRing server: rings of 65535 blocks/.test(a.peer.detail), a.peer.detail);
      const b = await brpcUbringCapability(at(refusing.port));
      assert(
        b.peer?.reachable === false && /stays on TCP: .*zeroed versions/.test(b.peer.detail),
        JSON.stringify(b),
      );
      const c = await brpcUbringCapability(at(plain.port));
      assert(
        c.peer?.reachable === false && /not a UBRing server/.test(c.peer.detail),
        JSON.stringify(c),
      );
      const r = await verbusAsync(["doctor", "--brpc-ubring", `127.0.0.1:${good.port}`]);
      assertEquals(r.code, 0, r.err);
      assert(/^brpc-ubring {2}usable: /m.test(r.out), r.out);
      assert(new RegExp(`127\\.0\\.0\\.1:${good.port}: reachable over UBRing`).test(r.out), r.out);
      const bad = await verbusAsync(["doctor", "--brpc-ubring", "nowhere"]);
      assertEquals(bad.code, 2, bad.err);
    } finally {
      await good.close();
      await refusing.close();
      await plain.close();
    }
    const d = await brpcUbringCapability(at(1));
    assert(d.peer?.reachable === false && /ECONNREFUSED/.test(d.peer.detail), JSON.stringify(d));
    assertEquals(ubringObjects(), []);
  },
  { timeoutMs: 60_000 },
);
