/**
 * Answers that find the producer's response half full wait in the agent for room instead of
 * failing: 32 answers of 64 KiB (each larger than a slot) released at once overfill the 2 MiB
 * half, yet every call is answered with the right bytes; a producer that dies while the agent
 * holds its answers has them dropped, its entry reclaimed and no spill range left in use.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { verifyLargeObject } from "../../examples/demo/large_object.ts";
import { encodeKeyRequest } from "../../examples/demo/codec.ts";
import type { Child } from "../util/proc.ts";
import type { AgentClient } from "../../rpc/agent/agent_client.ts";
import { startProducer, waitFor, withAgent } from "./util.ts";

const KIB64 = 64 * 1024;

/** The request of `test.Agent/HoldLarge`: the size of the large object it answers. */
function holdLarge(bytes: number): Uint8Array {
  const q = new Uint8Array(4);
  new DataView(q.buffer).setUint32(0, bytes, true);
  return q;
}

const ringStats = (c: AgentClient) => () => JSON.stringify(c.stats().ring);

test(
  "32 in flight × 64 KiB answers through the agent: more than the spill half holds, all answered",
  () =>
    withAgent("spillwait", async (s, _name, _agent, c) => {
      for (let round = 0; round < 3; round++) {
        const calls = Array.from(
          { length: 32 },
          () =>
            c.call("test.Agent", "HoldLarge", holdLarge(KIB64), { expectedResponseBytes: KIB64 }),
        );
        // All 32 answers reach the agent together: 32 × (64 KiB + header) > the 2 MiB half.
        await waitFor(() => s.held() === 32, "32 HoldLarge calls at the server");
        s.release();
        const got = await Promise.all(calls);
        got.forEach((r, i) => {
          assertEquals(r.via, "agent");
          assertEquals(verifyLargeObject(KIB64, r.response), -1, `round ${round} call ${i} bytes`);
        });
      }
      // And a LargeGet bench's pattern: 32 in flight, each answer consumed as it comes.
      let next = 0;
      await Promise.all(Array.from({ length: 32 }, async () => {
        while (next++ < 256) {
          const r = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), {
            expectedResponseBytes: KIB64,
          });
          assertEquals(verifyLargeObject(KIB64, r.response), -1, "LargeGet bytes");
        }
      }));
      // An answer larger than the whole half never fits: it fails at once, saying so.
      let msg = "";
      await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:3m"), {
        expectedResponseBytes: 3 << 20,
      }).catch((e) => (msg = e.message));
      assert(
        msg.includes("(3145728 bytes) does not fit") && msg.includes("2097152-byte spill half") &&
          !msg.includes("full"),
        msg,
      );
      const ring = c.stats().ring!;
      assert(ring.spilled >= 96 + 256, `answers spilled: ${JSON.stringify(ring)}`);
      assertEquals(ring.held, 0, "nothing held once all are answered");
      assertEquals(c.stats().direct, 0, "nothing went direct");
    }),
  { timeoutMs: 180_000 },
);

test(
  "a producer that dies while the agent holds its answers: they are dropped, its entry and spill freed",
  () =>
    withAgent("spillhoard", async (s, name, _agent, c) => {
      let victim: Child | undefined;
      try {
        await c.call("verbus.Demo", "Ping", new Uint8Array(8));
        // 32 answers (one per slot) of 128 KiB, never consumed: 15 fill its half, 17 are held.
        victim = await startProducer(name, [
          "--mode",
          "hoard",
          "--calls",
          "32",
          "--value-bytes",
          String(2 * KIB64),
        ]);
        await waitFor(() => s.held() === 32, "the hoarder's 32 HoldLarge calls at the server");
        s.release();
        await waitFor(
          () => (c.stats().ring?.held ?? 0) >= 8 && (c.stats().ring?.spillInUse ?? 0) > 0,
          "the agent holds the answers that found no room",
          30_000,
          ringStats(c),
        );
        // Meanwhile the honest producer's large answers go through its own half.
        for (let i = 0; i < 3; i++) {
          const r = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), {
            expectedResponseBytes: KIB64,
          });
          assertEquals(verifyLargeObject(KIB64, r.response), -1);
        }
        await victim.kill("SIGKILL");
        await waitFor(
          () => {
            const r = c.stats().ring!;
            return r.producersReclaimed >= 1 && r.held === 0 && r.spillInUse === 0;
          },
          "the dead producer's held answers dropped, its entry reclaimed, no spill range in use",
          30_000,
          ringStats(c),
        );
        const r = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:64k"), {
          expectedResponseBytes: KIB64,
        });
        assertEquals(verifyLargeObject(KIB64, r.response), -1, "the agent goes on");
      } finally {
        await victim?.kill();
      }
    }, ["--reclaim-ms", "200"]),
  { timeoutMs: 120_000 },
);
