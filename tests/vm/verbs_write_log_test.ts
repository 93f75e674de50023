/**
 * The verbs write log (transport/verbs/write_log_link.ts) on real Soft-RoCE QPs, through the
 * fabric contract: a flush of many small writes is ONE work request that the peer applies in
 * order; large writes stay direct and land before the logged word that publishes them; the log
 * never overwrites what the peer has not applied (FULL, then room again once it acknowledges);
 * `logBytes: 0` keeps one work request per write; and a peer that lies in its log fails only its
 * own session, with a reason naming the record.
 */
import { FULL, OK } from "../../transport/fabric.ts";
import type { VerbsEndpoint } from "../../transport/verbs/verbs_endpoint.ts";
import { assert, assertEquals, test } from "../harness.ts";
import { eventually, pattern } from "./fabric_verbs_util.ts";
import { AT, client, offerOf, server, SIZES } from "./verbs_providers.ts";

/** A connected pair; `serverExtra` goes to the server provider (e.g. `logBytes`). */
async function pair(serverExtra: Record<string, unknown> = {}, sessionId = 1) {
  const sp = await server("event", serverExtra), cp = await client("event");
  const offer = await offerOf(sp, sessionId);
  const c = await cp.open(offer.offer, SIZES) as VerbsEndpoint;
  const s = await offer.connect() as VerbsEndpoint;
  const close = async () => {
    c.close();
    s.close();
    await Promise.all([c.released, s.released]);
    sp.close();
    cp.close();
  };
  return { sp, cp, c, s, close };
}

function u32(ep: VerbsEndpoint, off: number): number {
  return new DataView(ep.local.buffer, ep.local.byteOffset + off, 4).getUint32(0, true);
}

test("a flush of 40 small writes and a large one is two work requests, applied in order", async () => {
  const { c, s, close } = await pair();
  try {
    const before = c.counters.requests, seen = s.doorbell();
    const big = pattern(3000, 3);
    assertEquals(c.write(0, AT + 16384, big, 0), OK, "large write (direct)");
    for (let i = 0; i < 40; i++) {
      assertEquals(c.write(0, AT + i * 64, pattern(60, i), 0), OK, `small write ${i}`);
    }
    assertEquals(c.writeU32(0, AT + 8192, 1, 0), OK);
    assertEquals(c.writeU32(0, AT + 8192, 2, 0), OK, "a later word to the same place");
    c.kick();
    assert(await eventually(() => s.doorbell() !== seen, 5000), "the batch arrived");
    assertEquals(c.counters.requests - before, 2, "one direct WRITE + one log batch");
    for (let i = 0; i < 40; i++) {
      assertEquals(s.local.subarray(AT + i * 64, AT + i * 64 + 60), pattern(60, i), `record ${i}`);
    }
    assertEquals(s.local.subarray(AT + 16384, AT + 16384 + 3000), big, "the direct write landed");
    assertEquals(u32(s, AT + 8192), 2, "the later word won");
  } finally {
    await close();
  }
});

test("the log never overwrites what the peer has not applied: FULL, then room once it acknowledges", async () => {
  const { c, s, close } = await pair({ logBytes: 16384 });
  try {
    let writes = 0, st = OK;
    for (; writes < 2000; writes++) {
      st = c.write(0, AT + (writes % 64) * 64, pattern(64, writes), 0);
      if (st !== OK) break;
      if (writes % 16 === 15) c.kick();
    }
    assertEquals(st, FULL, `the log filled up after ${writes} writes`);
    assert(writes < 400, `a 16 KiB log holds fewer than 400 records of 64 B (took ${writes})`);
    c.kick();
    // The server applies what arrived (its doorbell drains the hub) and acknowledges.
    let again = false;
    for (let i = 0; i < 500 && !again; i++) {
      s.doorbell();
      await new Promise((r) => setTimeout(r, 5));
      again = c.write(0, AT, pattern(64, 99999), 0) === OK;
    }
    assert(again, "room again after the server applied and acknowledged");
    const last = writes - 1;
    assertEquals(
      s.local.subarray(AT + (last % 64) * 64, AT + (last % 64) * 64 + 64),
      pattern(64, last),
      "the last write before FULL landed intact",
    );
    assert(
      !c.failed && !s.failed,
      `both endpoints healthy (${c.failureReason} / ${s.failureReason})`,
    );
  } finally {
    await close();
  }
});

test("logBytes 0: every write is its own work request, and the data still lands", async () => {
  const { c, s, close } = await pair({ logBytes: 0 });
  try {
    const before = c.counters.requests, seen = s.doorbell();
    assertEquals(c.write(0, AT, pattern(64, 5), 0), OK);
    assertEquals(c.writeU32(0, AT + 128, 7, 0), OK);
    c.kick();
    assert(await eventually(() => s.doorbell() !== seen, 5000), "the kick arrived");
    assertEquals(c.counters.requests - before, 3, "write + word + kick");
    assertEquals(s.local.subarray(AT, AT + 64), pattern(64, 5));
    assertEquals(u32(s, AT + 128), 7);
  } finally {
    await close();
  }
});

test("a peer that lies in its log fails only its own session, naming the record", async () => {
  const bad = await pair({}, 1);
  const good = await pair({}, 2);
  try {
    // A record aimed past the server's region: spoil the target offset in the client's outbox
    // (the first record of the first batch: batch header 16 B, then its offset word).
    assertEquals(bad.c.write(0, AT, pattern(32, 1), 0), OK);
    const outbox = new DataView(bad.c.resources.outbox!.buffer.buffer);
    outbox.setUint32(bad.c.resources.outbox!.buffer.byteOffset + 16, SIZES.server - 8, true);
    bad.c.kick();
    assert(
      await eventually(() => (bad.s.doorbell(), bad.s.failed), 5000),
      "the server side of the lying session failed",
    );
    assert(
      /broke the write log: .*record 0 targets \[\d+, \+32\), past the \d+-byte region/.test(
        bad.s.failureReason ?? "",
      ),
      `reason: ${bad.s.failureReason}`,
    );
    assertEquals(
      bad.s.local.subarray(SIZES.server - 8, SIZES.server).some((x) => x !== 0),
      false,
      "nothing was written at the end of the region",
    );
    const seen = good.s.doorbell();
    assertEquals(good.c.write(0, AT, pattern(48, 2), 0), OK);
    good.c.kick();
    assert(await eventually(() => good.s.doorbell() !== seen, 5000), "the other session works");
    assertEquals(good.s.local.subarray(AT, AT + 48), pattern(48, 2));
  } finally {
    await bad.close();
    await good.close();
  }
});
