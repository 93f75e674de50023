/**
 * Verbs sessions across processes and over time (Soft-RoCE VM): a server process on the other
 * runtime serves every path; a killed client leaves the server serving a new one; 8 concurrent
 * sessions; 100 connect/disconnect cycles leave no PD, MR, CQ, QP, CM id or context behind
 * (`rdma resource show` before/after).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { otherRuntime, spawnScript, withChild } from "../util/proc.ts";
import { RUNTIME } from "../../ffi/runtime.ts";
import {
  bigRequest,
  eventually,
  kernelResourceCounts,
  pattern,
  verbsClient,
  verbsServer,
} from "./fabric_verbs_util.ts";

const S = "t.Verbs";
const dec = new TextDecoder();

test(
  `a ${otherRuntime()} server process serves a ${RUNTIME} client over verbs on every path`,
  async () => {
    await withChild(
      otherRuntime(),
      "tests/vm/fixtures/verbs_server.ts",
      // A first start of the other runtime in the VM reads its binary through 9p and compiles
      // the graph on an emulated CPU: 27–75 s measured on a loaded host.
      { timeoutMs: 150_000 },
      async (child) => {
        const c = await verbsClient(child.port);
        try {
          assertEquals(
            c.fabric,
            "verbs",
            `fabric (${c.handshake.reason}); server output: ${child.output()}`,
          );
          assertEquals(
            dec.decode(
              (await c.call(S, "Runtime", new Uint8Array(0), { forcePath: "EAGER" })).response,
            ),
            otherRuntime(),
            "server runtime",
          );
          const e = await c.call(S, "Echo", pattern(1000, 1), { forcePath: "EAGER" });
          assertEquals([e.path, e.response], ["EAGER", pattern(1000, 1)], "EAGER");
          const l = await c.call(S, "Big", bigRequest(64 << 10, 2), { forcePath: "LAZY" });
          assertEquals([l.path, l.response], ["LAZY", pattern(64 << 10, 2)], "LAZY");
          const b = await c.call(S, "Echo", pattern(50_000, 3), { forcePath: "BULK" });
          assertEquals([b.path, b.response], ["BULK", pattern(50_000, 3)], "BULK");
          const all = await Promise.all(
            Array.from({ length: 32 }, (_, i) => c.call(S, "Echo", pattern(i * 100, i))),
          );
          all.forEach((r, i) =>
            assertEquals([r.fabric, r.response], ["verbs", pattern(i * 100, i)], `pipelined ${i}`)
          );
        } finally {
          await c.close();
        }
      },
    );
  },
  { timeoutMs: 240_000 },
);

test("a killed client process leaves the server serving a new client over verbs", async () => {
  const { server } = await verbsServer();
  const sessions = () => server.fabric?.sessions.size ?? -1;
  try {
    const child = await spawnScript(otherRuntime(), "tests/vm/fixtures/verbs_client.ts", {
      args: ["--port", String(server.port)],
      timeoutMs: 150_000, // as above: a first start of the other runtime
    });
    try {
      assert(
        await eventually(() => sessions() === 1, 5000),
        `one session while the client runs (have ${sessions()})`,
      );
    } finally {
      await child.kill("SIGKILL");
    }
    assert(
      await eventually(() => sessions() === 0, 10_000),
      `the dead client's session is gone (have ${sessions()})`,
    );
    const c = await verbsClient(server.port);
    try {
      assertEquals(c.fabric, "verbs", `new client (${c.handshake.reason})`);
      for (let i = 0; i < 20; i++) {
        assertEquals(
          (await c.call(S, "Echo", pattern(500, i))).response,
          pattern(500, i),
          `call ${i}`,
        );
      }
    } finally {
      await c.close();
    }
  } finally {
    await server.close();
  }
}, { timeoutMs: 240_000 });

test("8 concurrent verbs sessions, each with calls in flight on every path", async () => {
  const { server } = await verbsServer();
  try {
    const clients = await Promise.all(Array.from({ length: 8 }, () => verbsClient(server.port)));
    try {
      clients.forEach((c, i) =>
        assertEquals(c.fabric, "verbs", `client ${i} (${c.handshake.reason})`)
      );
      assertEquals(server.fabric?.sessions.size, 8, "8 sessions");
      await Promise.all(clients.map(async (c, k) => {
        for (let i = 0; i < 10; i++) {
          const path = (["EAGER", "LAZY", "BULK"] as const)[i % 3];
          const r = path === "LAZY"
            ? await c.call(S, "Big", bigRequest(20_000, k + i), { forcePath: "LAZY" })
            : await c.call(S, "Echo", pattern(path === "BULK" ? 30_000 : 300, k * 10 + i), {
              forcePath: path,
            });
          const want = path === "LAZY"
            ? pattern(20_000, k + i)
            : pattern(path === "BULK" ? 30_000 : 300, k * 10 + i);
          assertEquals([r.path, r.response], [path, want], `client ${k} call ${i}`);
        }
      }));
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  } finally {
    await server.close();
  }
}, { timeoutMs: 120_000 });

test("100 connect/disconnect cycles leak no PD, MR, CQ, QP, CM id or context", async () => {
  // No prepared resources on either side, so every held resource is counted while held and
  // released after (the pool's reuse is tested in verbs_hub_test.ts).
  const noPool = { preparedQps: 0 };
  const { server } = await verbsServer(noPool);
  try {
    // Warm up (libraries, event channel), then take the baseline.
    const w = await verbsClient(server.port, noPool);
    assertEquals(w.fabric, "verbs", `warm-up (${w.handshake.reason})`);
    await w.close();
    const sessions = () => server.fabric?.sessions.size ?? -1;
    await eventually(() => sessions() === 0, 5000);
    await new Promise((r) => setTimeout(r, 500)); // the warm-up's teardown lingers briefly
    const before = kernelResourceCounts();
    for (let i = 0; i < 100; i++) {
      const c = await verbsClient(server.port, noPool);
      try {
        assertEquals(c.fabric, "verbs", `cycle ${i} (${c.handshake.reason})`);
        assertEquals(
          (await c.call(S, "Echo", pattern(64, i))).response,
          pattern(64, i),
          `cycle ${i} call`,
        );
        if (i === 50) {
          const during = kernelResourceCounts();
          for (const k of ["qp", "mr", "cm_id"]) {
            assert(
              (during[`rxe0.${k}`] ?? 0) > (before[`rxe0.${k}`] ?? 0),
              `rxe0 ${k} counted while held: ${JSON.stringify(during)}`,
            );
          }
        }
      } finally {
        await c.close();
      }
    }
    const settled = await eventually(
      () => JSON.stringify(kernelResourceCounts()) === JSON.stringify(before),
      10_000,
    );
    assertEquals(
      kernelResourceCounts(),
      before,
      `kernel RDMA resources before/after 100 cycles (settled: ${settled})`,
    );
  } finally {
    await server.close();
  }
}, { timeoutMs: 240_000 });
