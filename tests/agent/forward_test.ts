/**
 * How the agent forwards (issue 35 item 1): without a promise per call — each call posted with its
 * answer's destination (`Client.callTo` / `ClientSession.submitTo`, a sink keyed by ring slot),
 * the answer copied from the remote session's slot straight into the producer's — and each drained
 * batch under one doorbell of the remote session:
 * - the sink as a unit, on a direct client: an EAGER answer handed over as a view (no promise,
 *   `sunk` counted), a LAZY one from staging, an error, a forced TCP call (through a promise,
 *   `callTo` says so), a call that times out;
 * - an agent in this process and producers in children, small and spilled records: every answer
 *   intact, every call forwarded without a promise, at most one request doorbell per batch.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { connectDirect } from "../../rpc/client/direct_client.ts";
import { startAgent } from "../../rpc/agent/agent.ts";
import type { AnswerSink } from "../../rpc/session/client/fabric_call.ts";
import type { ClientCallResult } from "../../rpc/client/client_options.ts";
import type { CallPath } from "../../rpc/client/selector.ts";
import { agentName, producerResult, startProducer, startTestServer, waitFor } from "./util.ts";
import type { Child } from "../util/proc.ts";

/** A sink that keeps what it was handed: copies of answers (by tag), results, failures. */
class RecordingSink implements AnswerSink {
  readonly answers = new Map<
    number,
    { bytes: Uint8Array; len: number; att: number; path: CallPath }
  >();
  readonly results = new Map<number, ClientCallResult>();
  readonly failures = new Map<number, unknown>();
  /** Whether the last answer's `src` was a view of shared memory (not a buffer of its own). */
  viewed = 0;
  answer(tag: number, src: Uint8Array, off: number, len: number, att: number, path: CallPath) {
    if (src.byteLength !== src.buffer.byteLength || off > 0) this.viewed++;
    this.answers.set(tag, { bytes: src.slice(off, off + len + att), len, att, path });
  }
  result(tag: number, r: ClientCallResult) {
    this.results.set(tag, r);
  }
  fail(tag: number, e: unknown) {
    this.failures.set(tag, e);
  }
  get settled(): number {
    return this.answers.size + this.results.size + this.failures.size;
  }
}

test(
  "Client.callTo: answers handed to the sink as views, no promise; errors, TCP and timeouts too",
  async () => {
    const s = await startTestServer();
    const c = await connectDirect(`127.0.0.1:${s.server.port}`, { fabric: "shm" });
    try {
      assertEquals(c.fabric, "shm");
      const sink = new RecordingSink();
      const msg = new Uint8Array(100).map((_, i) => i * 7);
      const att = new Uint8Array(20).fill(9);
      const session = c.session!;
      const sunk0 = session.stats.sunk;
      // 40 EAGER echoes with attachments: posted without a promise.
      for (let t = 0; t < 40; t++) {
        msg[0] = t;
        assert(
          c.callTo("verbus.Demo", "Echo", msg.slice(), { attachment: att }, sink, t),
          `call ${t}`,
        );
      }
      assertEquals(session.stats.sunk - sunk0, 40, "40 calls posted to the sink");
      // A LAZY answer (the demo's large object), an unknown method, a forced TCP call.
      assert(
        c.callTo(
          "verbus.Demo",
          "Echo",
          new Uint8Array(200_000).fill(3),
          { forcePath: "LAZY" },
          sink,
          100,
        ),
        "a BULK/LAZY call goes to the sink too",
      );
      c.callTo("verbus.Demo", "NoSuchMethod", msg, {}, sink, 101); // TCP (not in the hello) or fabric
      assertEquals(
        c.callTo("verbus.Demo", "Echo", msg, { forcePath: "TCP_FALLBACK" }, sink, 102),
        false,
        "a TCP call settles the sink through its promise",
      );
      // A call the server holds past its timeout: the sink hears the timeout.
      assert(
        c.callTo("test.Agent", "Hold", msg, { timeoutMs: 200 }, sink, 103),
        "held call posted",
      );
      await waitFor(() => sink.settled === 44, "44 settled calls", 30_000, () => `${sink.settled}`);
      for (let t = 0; t < 40; t++) {
        const a = sink.answers.get(t)!;
        assert(a !== undefined, `answer ${t}`);
        assertEquals([a.len, a.att, a.path], [100, 20, "EAGER"]);
        assertEquals(a.bytes[0], t, `answer ${t} is its own call's`);
        assertEquals(Array.from(a.bytes.subarray(1, 100)), Array.from(msg.subarray(1)));
        assertEquals(Array.from(a.bytes.subarray(100)), Array.from(att));
      }
      assert(sink.viewed >= 40, "answers came as views of the session's memory");
      assert(
        session.stats.bulkDirect >= 1,
        "the 200 kB request went BULK in one copy, not via staging",
      );
      const big = sink.answers.get(100)!;
      assertEquals([big.len, big.path !== "EAGER", big.bytes.every((b) => b === 3)], [
        200_000,
        true,
        true,
      ]);
      assert(sink.failures.get(101) instanceof Error, "unknown method fails");
      assertEquals(sink.results.get(102)?.path, "TCP_FALLBACK");
      const e = sink.failures.get(103);
      assert(e instanceof Error && /time/i.test(e.message), `timed out: ${e}`);
    } finally {
      await c.close();
      s.release();
      await s.server.close();
    }
  },
  { timeoutMs: 60_000 },
);

test(
  "agent: 6 producers × 32 in flight and one spilling: answers intact, no promise per forwarded call, one doorbell per batch",
  async () => {
    const s = await startTestServer();
    const name = agentName("fwd");
    const agent = await startAgent(`127.0.0.1:${s.server.port}`, {
      name,
      client: { fabric: "shm", timeoutMs: 120_000 },
    });
    const producers: Child[] = [];
    const CALLS = 64;
    try {
      assertEquals(agent.remote.fabric, "shm");
      for (let i = 0; i < 6; i++) {
        producers.push(
          await startProducer(name, [
            "--id",
            String(i),
            "--calls",
            String(CALLS),
            "--window",
            "32",
            "--value-bytes",
            String(100 + 37 * i),
          ]),
        );
      }
      // Values larger than a ring slot (64 KiB): spilled both ways, BULK/LAZY on the remote leg.
      producers.push(
        await startProducer(name, [
          "--id",
          "6",
          "--calls",
          "6",
          "--window",
          "3",
          "--value-bytes",
          "150000",
        ]),
      );
      const results = await Promise.all(producers.map((p) => producerResult(p)));
      results.forEach((r, i) => {
        const n = i === 6 ? 6 : CALLS;
        assertEquals([r.ok, r.badCount], [n, 0], `producer ${i}: ${r.bad.join("; ")}`);
      });
      const st = agent.stats();
      const calls = 2 * (6 * CALLS + 6) + 7; // a put and a get per call, and each producer's ping
      assertEquals(st.forwarded, calls, "every call forwarded once");
      assertEquals(st.failed, 0);
      assertEquals(st.viaPromise, 0, "no forwarded call cost a promise in the agent");
      assertEquals(st.remote.sunk, calls, "each posted with its answer's destination");
      const reclaims = agent.remote.session!.stats.reclaimsSent;
      assert(
        st.remote.doorbells <= st.batches + reclaims,
        `request doorbells ${st.remote.doorbells} ≤ batches ${st.batches} (+ ${reclaims} RECLAIM posts)`,
      );
      assert(st.batches < st.forwarded, `batches ${st.batches} < calls ${st.forwarded}`);
      // The 150 kB puts: from the producer's spill area into the server's BULK area in one copy.
      assert(
        agent.remote.session!.stats.bulkDirect >= 6,
        "spilled requests written without staging",
      );
    } finally {
      await Promise.all(producers.map((p) => p.kill()));
      await agent.close();
      s.release();
      await s.server.close();
    }
  },
  { timeoutMs: 300_000 },
);
