/**
 * URMA (simulated) across processes of DIFFERENT runtimes: the server runs in a child of the
 * other runtime (tests/urma/fixtures/fabric_server.ts), the client here; handshake, EAGER, LAZY,
 * BULK and 500 pipelined calls, then the server dies and calls go over TCP or fail cleanly.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { connect } from "../../rpc/client/client.ts";
import { otherRuntime, withChild } from "../util/proc.ts";
import { loadSim, sessionObjects, SIM_ABI, SIM_PATH, simPathFor, skipCross } from "./util.ts";

const other = otherRuntime();
const SKIP = skipCross(other);
const sim = { urma: { library: SIM_PATH } };
const region = {
  slots: 64,
  slotSize: 4096,
  bulkSize: 1 << 20,
  objectSlabs: 16,
  objectSlabSize: 65536,
  stagingSize: 1 << 21,
};

function pattern(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 13 + seed * 7) & 0xff;
  return b;
}
function sized(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}
function expectedSized(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + 7) & 0xff;
  return out;
}

/** A client of the child's server over URMA (simulated); asserts the handshake chose it. */
async function connectOverUrma(child: { port: number; output(): string }) {
  const c = await connect({ host: "127.0.0.1", port: child.port }, {
    fabric: "urma",
    providerOptions: sim,
    region,
    logger: { warn: () => {} },
  });
  assertEquals(
    [c.handshake.state, c.fabric],
    ["ESTABLISHED", "urma (simulated)"],
    JSON.stringify(c.handshake) + child.output(),
  );
  return c;
}

test(
  `client here, server in ${other}: every path over URMA (simulated), then the server dies`,
  async () => {
    await withChild(other, "tests/urma/fixtures/fabric_server.ts", {
      args: [SIM_PATH],
      timeoutMs: 30_000,
    }, async (child) => {
      const c = await connectOverUrma(child);
      try {
        const e = await c.call("test.Fabric", "Echo", pattern(100, 1), {
          attachment: pattern(30, 2),
        });
        assertEquals([e.path, e.response, e.attachment], [
          "EAGER",
          pattern(100, 1),
          pattern(30, 2),
        ]);
        const l = await c.call("test.Fabric", "Sized", sized(100_000), {
          expectedResponseBytes: 100_000,
        });
        assertEquals([l.path, l.response], ["LAZY", expectedSized(100_000)]);
        const b = await c.call("test.Fabric", "Echo", pattern(200_000, 3));
        assertEquals([b.path, b.response], ["BULK", pattern(200_000, 3)]);
        const rs = await Promise.all(
          Array.from({ length: 500 }, (_, i) => c.call("test.Fabric", "Echo", pattern(64, i))),
        );
        rs.forEach((r, i) =>
          assertEquals([r.path, r.response], ["EAGER", pattern(64, i)], `call ${i}`)
        );
        // idle, then a call: the other process sleeps in its JFCE wait and is woken
        await new Promise((r) => setTimeout(r, 50));
        assertEquals((await c.call("test.Fabric", "Echo", pattern(64, 7))).path, "EAGER");

        await child.kill();
        const after = await c.call("test.Fabric", "Echo", pattern(64, 8), { timeoutMs: 500 }).then(
          (r) => r.path,
          (e) => (e as Error).message,
        );
        assert(
          typeof after === "string",
          "the call settled (answered over TCP or failed), no hang",
        );
      } finally {
        await c.close();
      }
    });
    // the client's endpoint (it may have been asleep in waitInbound) released every object
    const u = await loadSim();
    const end = Date.now() + 3000;
    while (sessionObjects(u) !== 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(sessionObjects(u), 0, u.liveObjects()!.detail);
  },
  { skip: SKIP, timeoutMs: 90_000 },
);

test(
  `the ${other} server offers URMA and shm: each client gets the fabric it asks for`,
  async () => {
    await withChild(other, "tests/urma/fixtures/fabric_server.ts", {
      args: [SIM_PATH],
      timeoutMs: 30_000,
    }, async (child) => {
      for (const [fabric, want] of [["urma", "urma (simulated)"], ["shm", "shm"]] as const) {
        const c = await connect({ host: "127.0.0.1", port: child.port }, {
          fabric,
          providerOptions: sim,
          region,
          logger: { warn: () => {} },
        });
        try {
          assertEquals(c.fabric, want, JSON.stringify(c.handshake));
          assertEquals(
            (await c.call("test.Fabric", "Echo", pattern(64, 1))).response,
            pattern(64, 1),
          );
        } finally {
          await c.close();
        }
      }
    });
  },
  { skip: SKIP, timeoutMs: 90_000 },
);

test(
  `client here, server in ${other} on ANOTHER simulated ABI: descriptions fall back to the fixed form, every path works`,
  async () => {
    // The two builds share the simulator's registry (it holds no ABI-dependent struct), so the
    // hosts differ only in the layouts each liburma expects — as a mixed UB deployment would.
    const otherAbi = SIM_ABI === "25.12-B081" ? "26.06-ext" : "25.12-B081";
    await withChild(other, "tests/urma/fixtures/fabric_server.ts", {
      args: [simPathFor(otherAbi)],
      timeoutMs: 30_000,
    }, async (child) => {
      const c = await connectOverUrma(child);
      try {
        assertEquals((await c.call("test.Fabric", "Echo", pattern(100, 1))).path, "EAGER");
        const l = await c.call("test.Fabric", "Sized", sized(100_000), {
          expectedResponseBytes: 100_000,
        });
        assertEquals([l.path, l.response], ["LAZY", expectedSized(100_000)]);
        const b = await c.call("test.Fabric", "Echo", pattern(200_000, 3));
        assertEquals([b.path, b.response], ["BULK", pattern(200_000, 3)]);
      } finally {
        await c.close();
      }
    });
  },
  { skip: SKIP },
);
