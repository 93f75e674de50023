/**
 * The same-host agent over RDMA verbs (Soft-RoCE VM): the server on rxe1 (10.77.0.2) offers
 * verbs only; `verbus agent` connects once from rxe0 (10.77.0.1) over verbs; two producer
 * processes put and get through it (few: process start-up is slow under TCG), then this one.
 * Every call is answered with the agent's remote fabric "verbs", every put ran once, and the
 * server saw one connection: one QP for three processes.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { connect } from "../../rpc/client/client.ts";
import {
  agentName,
  producerResult,
  startAgentChild,
  startProducer,
  startTestServer,
  stopAgent,
} from "../agent/util.ts";
import type { Child } from "../util/proc.ts";
import { CLIENT_ADDR, kernelResourceCounts, SERVER_ADDR } from "./fabric_verbs_util.ts";

test(
  "3 processes through one agent whose remote leg is verbs: one connection, one QP",
  async () => {
    const s = await startTestServer({
      host: SERVER_ADDR,
      // No prepared pool on the server: its spare QPs would count as the agent's.
      fabric: {
        fabrics: ["verbs"],
        providerOptions: { verbs: { addr: SERVER_ADDR, port: 0, preparedQps: 0 } },
      },
      logger: { warn: () => {}, info: () => {} },
    });
    const name = agentName("verbs");
    const before = kernelResourceCounts();
    const agent = await startAgentChild(name, s.server.port, {
      host: SERVER_ADDR,
      script: "tests/agent/fixtures/agent.ts",
      extra: ["--fabric", "verbs", "--source-addr", CLIENT_ADDR, "--small-region"],
      timeoutMs: 300_000,
    });
    const producers: Child[] = [];
    try {
      assert(agent.output().includes("over verbs"), `agent: ${agent.output()}`);
      for (let i = 0; i < 2; i++) {
        producers.push(
          await startProducer(
            name,
            ["--id", String(i), "--calls", "40", "--window", "16"],
            300_000,
          ),
        );
      }
      const results = await Promise.all(producers.map((p) => producerResult(p, 400_000)));
      results.forEach((r, i) =>
        assertEquals([r.ok, r.badCount], [40, 0], `producer ${i}: ${r.bad.join("; ")}`)
      );
      for (let i = 0; i < 2; i++) {
        for (let j = 0; j < 40; j++) {
          assertEquals(
            s.kv.puts.get(`p${i}-${j}`),
            1,
            `p${i}-${j} once`,
          );
        }
      }
      const c = await connect(`agent:${name}`);
      const r = await c.call("verbus.Demo", "Echo", new Uint8Array(64));
      await c.close();
      assertEquals([r.via, r.fabric], ["agent", "verbs"]);
      assertEquals(s.server.stats().connectionsTotal, 1, "the server saw one connection");
      const after = kernelResourceCounts();
      const qps = (after["rxe1.qp"] ?? 0) - (before["rxe1.qp"] ?? 0);
      assert(qps <= 1, `server-side QPs for 3 processes: ${qps} (${JSON.stringify(after)})`);
    } finally {
      await Promise.all(producers.map((p) => p.kill()));
      await stopAgent(agent, name);
      await s.server.close();
    }
  },
  { timeoutMs: 600_000 },
);
