/**
 * How a verbs process waits on a software RDMA device (Soft-RoCE VM): rxe makes every completion
 * with this machine's CPUs (kernel work the waiting process competes with), so a progress loop
 * waiting for an answer blocks on its hub's completion channel — the core goes to that work, and
 * the answer's completion wakes the thread — instead of spinning with `sched_yield`, in event
 * and in poll mode. The client runs in its own process (its engine's only source is its rxe0 hub).
 */
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { serve } from "../../rpc/server.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { spawnScript } from "../util/proc.ts";
import { SERVER_ADDR, SMALL_REGION, TEST_SERVICES } from "./fabric_verbs_util.ts";

async function slowServer() {
  return await serve({
    port: 0,
    host: SERVER_ADDR,
    services: {
      "t.Verbs": {
        ...TEST_SERVICES["t.Verbs"],
        async Slow(request: Uint8Array) {
          await new Promise((r) => setTimeout(r, 15));
          return request;
        },
      },
    },
    fabric: {
      fabrics: ["verbs"],
      providerOptions: { verbs: { addr: SERVER_ADDR, port: 0 } },
      region: SMALL_REGION,
    },
    logger: { warn: () => {}, info: () => {} },
  });
}

for (const mode of ["event", "poll"] as const) {
  test(
    `a ${mode}-mode verbs client on rxe blocks on its CQ channel while it waits, never sched_yield`,
    async () => {
      const server = await slowServer();
      try {
        const child = await spawnScript(
          RUNTIME as RuntimeName,
          "tests/vm/fixtures/verbs_waiter.ts",
          {
            args: ["--port", String(server.port), "--mode", mode, "--calls", "12"],
            timeoutMs: 90_000,
          },
        );
        await child.exited;
        const line = child.output().split("\n").find((l) => l.startsWith("{"));
        assert(line !== undefined, `no result line: ${child.output()}`);
        const r = JSON.parse(line!);
        assertEquals(r.software, [true], `rxe0 is a software device (${line})`);
        assertEquals(r.cpuYields, 0, `sched_yields while waiting (${line})`);
        assert(r.hubBlocks >= 12, `blocks on the channel: one or more per call (${line})`);
        if (mode === "poll") { // poll mode never parks an off-thread wait: blocks take every answer
          assert(r.blockWakes >= 6, `answers that ended a block (${line})`);
        } else { // event mode parks its channel wait after idleAfterMs: that one may take the answer
          assert(r.engineBlocks >= 12, `the engine's yields blocked (${line})`);
        }
      } finally {
        await server.close();
      }
    },
    { timeoutMs: 120_000 },
  );
}
