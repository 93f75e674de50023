/**
 * The agent's spill path (issue 15): a request or answer larger than one ring slot goes into the
 * producer's spill area of the agent's shm object — 1 MiB BigPut, KvGet and LargeGet through the
 * agent with no fallback; calls in flight sharing one spill area; a producer SIGKILLed with a
 * spilled call in flight (its answer's range is freed when its entry is reclaimed); hostile spill
 * descriptors (out of bounds, unaligned, negative, too long) rejected while the honest producer
 * goes on.
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import type { Child } from "../util/proc.ts";
import { AgentRingPort } from "../../transport/agent_ring/agent_ring_port.ts";
import { verifyLargeObject } from "../../examples/demo/large_object.ts";
import {
  decodeGetResponse,
  encodeKeyRequest,
  encodePutRequest,
} from "../../examples/demo/codec.ts";
import { startProducer, verbusAsync, waitFor, withAgent } from "./util.ts";
import { agentValue } from "./util_values.ts";

const MIB = 1 << 20;

test(
  "1 MiB BigPut, KvGet and LargeGet through the agent: spilled both ways, no fallback, put once",
  () =>
    withAgent("spill", async (s, _name, _agent, c) => {
      const value = agentValue("big1", MIB);
      const put = await c.call("verbus.Demo", "BigPut", encodePutRequest("big1", value));
      assertEquals([put.via, put.path], ["agent", "BULK"]);
      assertEquals(s.kv.puts.get("big1"), 1, "applied once");
      const got = await c.call("verbus.Demo", "KvGet", encodeKeyRequest("big1"), {
        expectedResponseBytes: MIB,
      });
      assertEquals(got.via, "agent");
      assert(
        decodeGetResponse(got.response)!.every((b, i) => b === value[i]),
        "the 1 MiB value came back",
      );
      const l = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:1m"), {
        expectedResponseBytes: MIB,
      });
      assertEquals([l.via, verifyLargeObject(MIB, l.response)], ["agent", -1]);
      // Eight 384 KiB echoes at once share one 2 MiB request half: some wait for room, all answer.
      const echoes = await Promise.all(
        Array.from(
          { length: 8 },
          (_, i) => c.call("verbus.Demo", "Echo", agentValue(`e${i}`, 384 * 1024)),
        ),
      );
      echoes.forEach((r, i) => assertEquals(r.response, agentValue(`e${i}`, 384 * 1024)));
      const ring = c.stats().ring!;
      assert(ring.spilled >= 10, `answers spilled: ${JSON.stringify(ring)}`);
      assertEquals(c.stats().direct, 0, "nothing went direct");
      assertEquals(s.server.stats().connectionsTotal, 1, "one server connection: the agent's");
    }),
  { timeoutMs: 120_000 },
);

test(
  "a producer killed with a spilled call in flight: its answer's spill range is freed with its entry",
  () =>
    withAgent("spillkill", async (s, name, _agent, c) => {
      let victim: Child | undefined;
      try {
        await c.call("verbus.Demo", "Ping", new Uint8Array(8));
        victim = await startProducer(name, ["--mode", "spill", "--value-bytes", String(MIB)]);
        await waitFor(() => s.held() === 1, "the victim's 1 MiB Hold at the server");
        await victim.kill("SIGKILL");
        s.release(); // the agent answers 1 MiB into the dead producer's response half
        await waitFor(
          () => (c.stats().ring?.spilled ?? 0) >= 1,
          "the dead producer's answer spilled",
          30_000,
          () => JSON.stringify(c.stats().ring),
        );
        // The honest producer goes on with large calls meanwhile.
        for (let i = 0; i < 3; i++) {
          const r = await c.call("verbus.Demo", "Echo", agentValue(`h${i}`, 600_000));
          assertEquals(r.response, agentValue(`h${i}`, 600_000));
        }
        await waitFor(
          () => {
            const r = c.stats().ring!;
            return r.producersReclaimed >= 1 && r.spillInUse === 0;
          },
          "the dead producer's entry reclaimed and no spill range left in use",
          30_000,
          () => JSON.stringify(c.stats().ring),
        );
      } finally {
        await victim?.kill();
      }
    }, ["--reclaim-ms", "200"]),
  { timeoutMs: 120_000 },
);

test(
  "hostile spill descriptors are rejected; the agent and the honest producer go on",
  () =>
    withAgent("spillbad", async (_s, name, agent, c) => {
      const bad = await AgentRingPort.open(name);
      try {
        await c.call("verbus.Demo", "Ping", new Uint8Array(8));
        bad.attach();
        const half = bad.maxRecord;
        const lies: [string, number, number][] = [
          ["past the half", half, 64],
          ["overflowing the half", half - 32, 64],
          ["negative", -64, 64],
          ["unaligned", 12, 64],
          ["longer than the half", 0, half + 8],
          ["another producer's half (huge)", 0x7fff_fff8, 64],
        ];
        const before = c.stats().ring!.rejected;
        lies.forEach(([, off, len], k) => assert(bad.postSpillRawForTest(k, off, len), "posted"));
        await waitFor(
          () => lies.every((_, k) => bad.ready(k) === 0),
          "every lie answered with an empty (rejected) record",
          30_000,
          () => JSON.stringify(lies.map((_, k) => bad.ready(k))),
        );
        await waitFor(() => c.stats().ring!.rejected >= before + lies.length, "counted");
        const r = await c.call("verbus.Demo", "Echo", agentValue("after", MIB));
        assertEquals([r.via, r.response.length], ["agent", MIB]);
        assertEquals(agent.output().includes("stopped"), false, "the agent runs");
      } finally {
        bad.close();
      }
    }),
  { timeoutMs: 120_000 },
);

test(
  "verbus call --agent NAME --large-get big:64k (larger than a slot) goes through the agent",
  () =>
    withAgent("clispill", async (s, name) => {
      const r = await verbusAsync([
        "call",
        "--agent",
        name,
        "--large-get",
        "big:64k",
        "--bigput",
        "cli-big",
        "200000",
        "--json",
      ]);
      assertEquals(r.code, 0, r.output);
      const lines = r.output.trim().split("\n").map((l) => JSON.parse(l));
      assertEquals(lines.map((l) => [l.op, l.ok, l.path]), [
        ["large-get", true, "LAZY"],
        ["bigput", true, "BULK"],
      ]);
      assertEquals(lines[0].result.bytes, 65536);
      assertEquals(s.kv.puts.get("cli-big"), 1, "through the agent, once");
      assertEquals(s.server.stats().connectionsTotal, 1, "no direct connection: the agent's only");
      const bad = await verbusAsync(["call", "--agent", name, "--stats"]);
      assert(bad.code === 2 && bad.output.includes("direct connection"), bad.output);
    }),
  { timeoutMs: 120_000 },
);
