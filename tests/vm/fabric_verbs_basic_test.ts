/**
 * The verbs fabric end to end over Soft-RoCE (client on rxe0 10.77.0.1 → server on rxe1
 * 10.77.0.2): handshake ESTABLISHED with fabric "verbs"; EAGER, LAZY and BULK byte-exact, in
 * every combination of poll/event mode; pipelined calls; a wrong address named in the reason;
 * a QP error (corrupted rkey) fails the session and later calls go over TCP, none lost.
 */
import { assert, assertEquals, test } from "../harness.ts";
import type { VerbsEndpoint } from "../../transport/verbs/verbs_endpoint.ts";
import {
  bigRequest,
  CLIENT_ADDR,
  pattern,
  SERVER_ADDR,
  verbsClient,
  verbsServer,
} from "./fabric_verbs_util.ts";

const S = "t.Verbs";

for (
  const [sm, cm] of [["event", "event"], ["poll", "poll"], ["event", "poll"], [
    "poll",
    "event",
  ]] as const
) {
  test(
    `server ${sm} / client ${cm}: ESTABLISHED over verbs; EAGER, LAZY, BULK byte-exact; 64 pipelined calls`,
    async () => {
      const { server, log } = await verbsServer({ mode: sm });
      try {
        const c = await verbsClient(server.port, { mode: cm });
        try {
          assertEquals(
            c.handshake.state,
            "ESTABLISHED",
            `handshake: ${c.handshake.reason} / server: ${log.warn.join(" | ")}`,
          );
          assertEquals(c.fabric, "verbs", "fabric");
          const small = pattern(200, 1), att = pattern(300, 2);
          const e = await c.call(S, "Echo", small, { attachment: att, forcePath: "EAGER" });
          assertEquals([e.path, e.fabric], ["EAGER", "verbs"], "EAGER path");
          assertEquals(e.response, small, "EAGER response bytes");
          assertEquals(e.attachment, att, "EAGER attachment bytes");
          const l = await c.call(S, "Big", bigRequest(64 << 10, 3), { forcePath: "LAZY" });
          assertEquals([l.path, l.fabric], ["LAZY", "verbs"], "LAZY path");
          assertEquals(l.response, pattern(64 << 10, 3), "LAZY response bytes");
          const big = pattern(100_000, 4), batt = pattern(20_000, 5);
          const b = await c.call(S, "Echo", big, { attachment: batt, forcePath: "BULK" });
          assertEquals(b.path, "BULK", "BULK path");
          assertEquals(b.response, big, "BULK response bytes");
          assertEquals(b.attachment, batt, "BULK attachment bytes");
          const all = await Promise.all(
            Array.from(
              { length: 64 },
              (_, i) => c.call(S, "Echo", pattern(16 + i * 37, i), { forcePath: "EAGER" }),
            ),
          );
          all.forEach((r, i) =>
            assertEquals(r.response, pattern(16 + i * 37, i), `pipelined call ${i}`)
          );
          assert(all.every((r) => r.fabric === "verbs"), "pipelined calls over verbs");
        } finally {
          await c.close();
        }
      } finally {
        await server.close();
      }
    },
    { timeoutMs: 60_000 },
  );
}

test("a wrong RDMA address is named in the fallback reason (what to check)", async () => {
  const { server } = await verbsServer();
  try {
    const c = await verbsClient(server.port, { sourceAddr: "10.0.0.5", connectTimeoutMs: 2000 });
    try {
      assertEquals(c.fabric, "tcp", "falls back to TCP");
      assert(
        /10\.0\.0\.5/.test(c.handshake.reason ?? "") &&
          /RDMA interface address/.test(c.handshake.reason ?? ""),
        `reason: ${c.handshake.reason}`,
      );
      const r = await c.call(S, "Echo", pattern(10, 1));
      assertEquals([r.fabric, r.response], ["tcp", pattern(10, 1)], "TCP still works");
    } finally {
      await c.close();
    }
  } finally {
    await server.close();
  }
}, { timeoutMs: 60_000 });

test("a server bound to a non-RDMA address refuses verbs with what to check", async () => {
  const { server, log } = await verbsServer({ addr: "127.0.0.1" });
  try {
    const c = await verbsClient(server.port);
    try {
      assertEquals(c.fabric, "tcp", "TCP");
      assert(
        /127\.0\.0\.1/.test(c.handshake.reason ?? ""),
        `reason names the address: ${c.handshake.reason}; log ${log.warn}`,
      );
    } finally {
      await c.close();
    }
  } finally {
    await server.close();
  }
}, { timeoutMs: 60_000 });

test(
  "QP error (corrupted rkey): the session fails naming the status, later calls go over TCP, none lost",
  async () => {
    const { server } = await verbsServer();
    try {
      const c = await verbsClient(server.port, {}, { timeoutMs: 3000 });
      try {
        assertEquals(c.fabric, "verbs", `fabric (${c.handshake.reason})`);
        for (let i = 0; i < 10; i++) {
          assertEquals(
            (await c.call(S, "Echo", pattern(64, i))).fabric,
            "verbs",
            "before the fault",
          );
        }
        const ep = c.session!.endpoint as VerbsEndpoint;
        ep.faults.inject("bad-remote-key");
        // The call that hits the bad key settles (error or timeout) — never hangs.
        const poisoned = await c.call(S, "Echo", pattern(64, 99)).then(
          (r) => `ok ${r.fabric}`,
          (e) => `error ${(e as Error).message}`,
        );
        assert(ep.failed, "the endpoint failed");
        assert(
          /remote access error|REM_ACCESS/i.test(ep.failureReason ?? "") &&
            /RDMA WRITE/.test(ep.failureReason ?? "") && ep.failureReason!.includes(SERVER_ADDR),
          `reason names status, opcode and peer: ${ep.failureReason}`,
        );
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => c.call(S, "Echo", pattern(100, i))),
        );
        results.forEach((r, i) => {
          assertEquals(r.fabric, "tcp", `call ${i} after the fault goes over TCP`);
          assertEquals(r.response, pattern(100, i), `call ${i} bytes`);
        });
        assert(poisoned.length > 0, `poisoned call settled: ${poisoned}`);
      } finally {
        await c.close();
      }
    } finally {
      await server.close();
    }
  },
  { timeoutMs: 60_000 },
);

test("client source address pins the device: the session's QP lives on rxe0", async () => {
  const { server } = await verbsServer();
  try {
    const c = await verbsClient(server.port);
    try {
      const ep = c.session!.endpoint as VerbsEndpoint;
      assertEquals(ep.resources.ctx.deviceName, "rxe0", `client device (source ${CLIENT_ADDR})`);
      assert(ep.qpCap.maxInlineData >= 64, `inline granted: ${ep.qpCap.maxInlineData}`);
    } finally {
      await c.close();
    }
  } finally {
    await server.close();
  }
}, { timeoutMs: 30_000 });
