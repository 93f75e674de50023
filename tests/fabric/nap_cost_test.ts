/**
 * What a server costs between the calls of a client that calls now and then (a call every ~2 ms,
 * sooner than the engine's idle sleep, 5 ms): before naps, its engine busy-polled the whole gap —
 * a core kept at ~100 % by a client making 500 calls a second. With naps (shm's notify page) it
 * blocks its thread in a futex wait between the calls. Its own CPU time, read from /proc over
 * ~1.5 s, must stay under half a core: a generous bound (no timing of speed), which a loaded host
 * only makes easier to meet (there the old loop slept early too).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { connect } from "../../rpc/client/client.ts";
import { RUNTIME, type RuntimeName } from "../../ffi/runtime.ts";
import { withChild } from "../util/proc.ts";
import { pattern, SHM_ONLY } from "./util.ts";
import { procUsage } from "../../bench/common/proc_cpu.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** User + kernel CPU time of process `pid` so far, ms. */
function cpuMs(pid: number): number {
  const u = procUsage(pid, { switches: false });
  return u.user + u.sys;
}

test(
  "a server between the calls of a client calling every 2 ms uses under half a core",
  async () => {
    await withChild(RUNTIME as RuntimeName, "tests/fixtures/fabric_server.ts", {
      args: ["--slots", "64"],
    }, async (child) => {
      const c = await connect({ host: "127.0.0.1", port: child.port }, { fabric: "shm" });
      try {
        for (let i = 0; i < 50; i++) await c.call("verbus.Demo", "Echo", pattern(16, i)); // warm
        const c0 = cpuMs(child.pid), t0 = performance.now();
        let calls = 0;
        while (performance.now() - t0 < 1500) {
          const r = await c.call("verbus.Demo", "Echo", pattern(16, calls));
          assertEquals(r.fabric, "shm");
          calls++;
          await sleep(2);
        }
        const pct = ((cpuMs(child.pid) - c0) / (performance.now() - t0)) * 100;
        assert(pct < 50, `the server used ${pct.toFixed(1)} % of a core for ${calls} calls`);
      } finally {
        await c.close();
      }
    });
  },
  { skip: SHM_ONLY, timeoutMs: 60_000 },
);
