/**
 * Across runtimes and processes: a server on the other runtime (Deno server + Bun client, and
 * the reverse when the suite runs on the other runtime) answering every path over shm; and an
 * idle server with a live session uses well under 1 % CPU (it sleeps in a futex wait).
 */
import { readFileSync } from "node:fs";
import { assert, assertEquals, test } from "../harness.ts";
import { connect } from "../../rpc/client/client.ts";
import {
  decodeGetResponse,
  encodeKeyRequest,
  encodePutRequest,
} from "../../examples/demo/codec.ts";
import { verifyLargeObject } from "../../examples/demo/large_object.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { FABRIC_LABEL, pattern, SHM_ONLY, SMALL_REGION } from "./util.ts";

const other = otherRuntime();

test(`every path against a ${other} server in another process`, async () => {
  await withChild(other, "tests/fixtures/fabric_server.ts", {}, async (child) => {
    const c = await connect({ host: "127.0.0.1", port: child.port }, { region: SMALL_REGION });
    try {
      assertEquals(c.fabric, "shm", `handshake: ${c.handshake.reason}`);
      const rt = await c.call("test.Fabric", "Runtime", new Uint8Array(0));
      assertEquals(new TextDecoder().decode(rt.response), other);
      const e = await c.call("verbus.Demo", "Echo", pattern(1000, 1));
      assertEquals([e.path, e.response], ["EAGER", pattern(1000, 1)]);
      const put = await c.call("verbus.Demo", "BigPut", encodePutRequest("k", pattern(100_000, 2)));
      assertEquals(put.path, "BULK");
      const g = await c.call("verbus.Demo", "KvGet", encodeKeyRequest("k"));
      assertEquals([g.path, decodeGetResponse(g.response)], ["LAZY", pattern(100_000, 2)]);
      const l = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:512k"), {
        expectedResponseBytes: 1 << 19,
      });
      assertEquals([l.path, l.response.length, verifyLargeObject(1 << 19, l.response)], [
        "LAZY",
        1 << 19,
        -1,
      ]);
      // 1 MiB + header does not fit the 16-slab pool: a call expecting it goes over TCP from the
      // start (the server would run it and have no room for its answer; it is never redone).
      const f = await c.call("verbus.Demo", "LargeGet", encodeKeyRequest("big:1m"), {
        expectedResponseBytes: 1 << 20,
      });
      assertEquals([f.path, f.response.length, verifyLargeObject(1 << 20, f.response)], [
        "TCP_FALLBACK",
        1 << 20,
        -1,
      ]);
      const t = await c.call("verbus.Demo", "Echo", pattern(10, 3), { forcePath: "TCP_FALLBACK" });
      assertEquals([t.path, t.response], ["TCP_FALLBACK", pattern(10, 3)]);
      const many = await Promise.all(
        Array.from({ length: 500 }, (_, i) => c.call("verbus.Demo", "Echo", pattern(32, i))),
      );
      many.forEach((r, i) => assertEquals(r.response, pattern(32, i)));
    } finally {
      await c.close();
    }
  });
}, { timeoutMs: 60_000, skip: SHM_ONLY });

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return Number(f[11]) + Number(f[12]); // utime + stime (fields 14, 15)
}

test(`an idle ${other} server with a live session sleeps: < 1 % CPU over 6 s`, async () => {
  await withChild(other, "tests/fixtures/fabric_server.ts", {}, async (child) => {
    const c = await connect({ host: "127.0.0.1", port: child.port }, { region: SMALL_REGION });
    try {
      assertEquals(c.fabric, FABRIC_LABEL);
      for (let i = 0; i < 200; i++) await c.call("verbus.Demo", "Echo", pattern(16, i)); // busy, then idle
      await new Promise((r) => setTimeout(r, 1000));
      const t0 = cpuTicks(child.pid), w0 = Date.now();
      await new Promise((r) => setTimeout(r, 6000));
      const ticks = cpuTicks(child.pid) - t0, secs = (Date.now() - w0) / 1000;
      const pct = (ticks / 100) / secs * 100; // USER_HZ = 100
      assert(pct < 1, `idle server used ${pct.toFixed(2)} % CPU`);
      const r = await c.call("verbus.Demo", "Echo", pattern(16, 1));
      assertEquals(r.path, "EAGER", "and wakes for the next call");
    } finally {
      await c.close();
    }
  });
}, { timeoutMs: 60_000, skip: SHM_ONLY });
