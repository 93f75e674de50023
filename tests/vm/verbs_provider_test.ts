/**
 * The verbs providers through the fabric contract alone (transport/provider.ts), no rpc layer
 * (Soft-RoCE VM: server on rxe1 10.77.0.2, client bound to rxe0 10.77.0.1):
 * `createServerProvider` → `offer` → client `open(offer, sizes)` → `offer.connect()` gives two
 * connected endpoints that write, read, publish and kick; a wrong nonce or a bad offer field
 * fails with HANDSHAKE; `abort()` before connect releases the QP, MRs and CM id; the faults port
 * breaks an endpoint on purpose.
 */
import { VerbusError } from "../../errors.ts";
import { FAILED, OK, SIGNALED } from "../../transport/fabric.ts";
import type { VerbsEndpoint } from "../../transport/verbs/verbs_endpoint.ts";
import { CmEventLoop } from "../../transport/verbs/cm_events.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { AT, client, completion, offerOf, server, SIZES } from "./verbs_providers.ts";
import { eventually, kernelResourceCounts, pattern } from "./fabric_verbs_util.ts";

async function rejects(p: Promise<unknown>, code: string, re: RegExp, what: string) {
  try {
    await p;
  } catch (e) {
    assert(e instanceof VerbusError && e.code === code, `${what}: code ${(e as VerbusError).code}`);
    assert(re.test((e as Error).message), `${what}: message ${(e as Error).message}`);
    return;
  }
  throw new Error(`${what}: did not reject`);
}

for (const [sm, cm] of [["event", "event"], ["poll", "poll"], ["event", "poll"]] as const) {
  test(
    `providers (server ${sm} / client ${cm}): offer → open → connect; write, writeU32, read, kick`,
    async () => {
      const sp = await server(sm), cp = await client(cm);
      try {
        const offer = await offerOf(sp);
        const c = await cp.open(offer.offer, SIZES);
        const s = await offer.connect();
        offer.abort("no-op after connect");
        try {
          assertEquals([c.kind, s.kind, c.remoteSize, s.remoteSize], [
            "verbs",
            "verbs",
            SIZES.server,
            SIZES.client,
          ], "kinds and remote sizes");
          assertEquals((c as VerbsEndpoint).resources.ctx.deviceName, "rxe0", "client device");
          // client → server: a body, then its publication word, then a kick
          const seen = s.doorbell();
          const body = pattern(3000, 7);
          assertEquals(c.write(1, AT, body, 0), OK, "write");
          assertEquals(c.writeU32(2, AT + 4096, 0xC0FFEE, SIGNALED), OK, "writeU32");
          c.kick();
          assertEquals(await completion(c, 2), 0, "writeU32 completion status");
          assert(
            await eventually(() => s.doorbell() !== seen, 5000),
            "the kick moved the doorbell",
          );
          assertEquals(s.local.subarray(AT, AT + 3000), body, "written bytes");
          assertEquals(
            new DataView(s.local.buffer, s.local.byteOffset + AT + 4096, 4).getUint32(0, true),
            0xC0FFEE,
            "published word",
          );
          // server reads from the client's region, gathers back into it
          c.local.set(pattern(5000, 9), AT);
          const dst = s.local.subarray(AT + 8192, AT + 8192 + 5000);
          assertEquals(s.read(3, dst, AT, SIGNALED), OK, "read");
          assertEquals(await completion(s, 3), 0, "read completion status");
          assertEquals(dst, pattern(5000, 9), "read bytes");
          const sg = [s.local.subarray(AT, AT + 100), s.local.subarray(AT + 200, AT + 300)];
          assertEquals(s.writeSg(4, AT + 20_000, sg, 2, SIGNALED), OK, "writeSg");
          assertEquals(await completion(s, 4), 0, "writeSg completion status");
          assertEquals(c.local.subarray(AT + 20_000, AT + 20_100), body.subarray(0, 100), "sg 1");
          assertEquals(c.local.subarray(AT + 20_100, AT + 20_200), body.subarray(200, 300), "sg 2");
          // a kick wakes a waiting client
          const cSeen = c.doorbell();
          const woke = c.waitInbound(cSeen, 5000);
          s.kick();
          s.flush();
          await woke;
          assert(await eventually(() => c.doorbell() !== cSeen, 5000), "the server's kick arrived");
        } finally {
          c.close();
          s.close();
          await Promise.all([(c as VerbsEndpoint).released, (s as VerbsEndpoint).released]);
        }
      } finally {
        sp.close();
        cp.close();
      }
    },
    { timeoutMs: 60_000 },
  );
}

test(
  "a wrong nonce, a bad offer field or other sizes fail with HANDSHAKE; the server's connect() too",
  async () => {
    const sp = await server("event", { acceptTimeoutMs: 500 }), cp = await client("event");
    try {
      const offer = await offerOf(sp);
      const o = offer.offer as Record<string, unknown>;
      await rejects(cp.open({ ...o, nonce: "0".repeat(32) }, SIZES), "HANDSHAKE", /nonce/, "nonce");
      await rejects(cp.open({ ...o, port: "x" }, SIZES), "HANDSHAKE", /field port/, "offer field");
      await rejects(
        cp.open({ ...o, nonce: "zz" }, SIZES),
        "HANDSHAKE",
        /field nonce/,
        "nonce text",
      );
      await rejects(
        cp.open(o, { ...SIZES, client: SIZES.client * 2 }),
        "HANDSHAKE",
        /sizes/,
        "sizes",
      );
      await rejects(offer.connect(), "HANDSHAKE", /never connected|no RDMA connection/, "connect");
      assertEquals(sp.pendingOffers, 0, "the failed offer is forgotten");
    } finally {
      sp.close();
      cp.close();
    }
  },
  { timeoutMs: 60_000 },
);

test("abort() before connect releases the QP, MRs and CM id; safe twice", async () => {
  // No prepared resources: an aborted offer's PD, MRs and QP are released, not kept for the next
  // session (the pool's own test is in verbs_hub_test.ts).
  const sp = await server("event", { preparedQps: 0 }), cp = await client("event");
  try {
    // warm up (libraries, listener, event channel)
    const warm = await offerOf(sp, 1);
    warm.abort("warm-up");
    await new Promise((r) => setTimeout(r, 100)); // the pool trims what earlier tests left ready
    const before = kernelResourceCounts();
    const offer = await offerOf(sp, 2);
    const during = kernelResourceCounts();
    for (const k of ["qp", "mr", "pd"]) {
      assert(
        (during[`rxe1.${k}`] ?? 0) > (before[`rxe1.${k}`] ?? 0),
        `rxe1 ${k} held by the offer: ${JSON.stringify(during)}`,
      );
    }
    offer.abort("test");
    offer.abort("twice");
    assertEquals(kernelResourceCounts(), before, "resources after abort");
    await rejects(
      offer.connect(),
      "HANDSHAKE",
      /already used|released|never connected/,
      "connect after abort",
    );
    // a client connecting to an aborted offer is refused, and keeps nothing
    await rejects(cp.open(offer.offer, SIZES), "HANDSHAKE", /rejected|no pending/, "open aborted");
    assert(
      await eventually(
        () => JSON.stringify(kernelResourceCounts()) === JSON.stringify(before),
        5000,
      ),
      `resources after the refused open: ${JSON.stringify(kernelResourceCounts())}`,
    );
  } finally {
    sp.close();
    cp.close();
  }
}, { timeoutMs: 60_000 });

test(
  "faults port: bad-remote-key and out-of-bounds fail with a remote access error; fail at once",
  async () => {
    const sp = await server("poll"), cp = await client("poll");
    try {
      for (const kind of ["bad-remote-key", "out-of-bounds", "fail"] as const) {
        const offer = await offerOf(sp);
        const c = await cp.open(offer.offer, SIZES);
        const s = await offer.connect();
        try {
          assert(c.faults.supported.includes(kind), `${kind} supported`);
          assertEquals(c.write(1, AT, pattern(64, 1), SIGNALED), OK, `${kind}: write before`);
          assertEquals(await completion(c, 1), 0, `${kind}: healthy before`);
          c.faults.inject(kind, "injected by the test");
          if (kind === "fail") {
            assert(
              c.failed && c.failureReason === "injected by the test",
              `fail: ${c.failureReason}`,
            );
            assertEquals(c.write(2, AT, pattern(64, 2), SIGNALED), FAILED, "write after fail");
            continue;
          }
          c.write(2, AT, pattern(64, 2), SIGNALED);
          assert(await completion(c, 2) !== 0, `${kind}: the write completes with an error`);
          assert(c.failed, `${kind}: the endpoint failed`);
          assert(
            /remote access error|REM_ACCESS/i.test(c.failureReason ?? "") &&
              /RDMA WRITE/.test(c.failureReason ?? ""),
            `${kind}: reason names the status and opcode: ${c.failureReason}`,
          );
        } finally {
          c.close();
          s.close();
          await Promise.all([(c as VerbsEndpoint).released, (s as VerbsEndpoint).released]);
        }
      }
    } finally {
      sp.close();
      cp.close();
    }
  },
  { timeoutMs: 60_000 },
);

test(
  "an idle session's rdma_cm loop waits rarely, and ends at once when the last id leaves",
  async () => {
    // It waited 100 ms at a time: ten worker round trips a second in every process with a session.
    const sp = await server("event"), cp = await client("event");
    const offer = await offerOf(sp, 9);
    const c = await cp.open(offer.offer, SIZES);
    const s = await offer.connect();
    const loop = CmEventLoop.current();
    assert(loop !== null && loop.running, "the loop runs while the session's ids are routed");
    try {
      await new Promise((r) => setTimeout(r, 200));
      const w0 = loop.waits;
      await new Promise((r) => setTimeout(r, 1500));
      assert(loop.waits - w0 <= 1, `${loop.waits - w0} waits in 1.5 s of an idle session`);
    } finally {
      c.close();
      s.close();
      sp.close();
      cp.close();
    }
    // Its wait is 10 s long: only the wake of the last id leaving ends it this soon.
    assert(
      await eventually(() => loop.routed === 0 && !loop.running, 2000),
      `loop after close: ${loop.routed} ids routed, running ${loop.running}`,
    );
  },
  { timeoutMs: 60_000 },
);
