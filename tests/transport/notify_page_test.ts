/**
 * The process notify page: a collect reports exactly the tokens announced since the last one —
 * the flat tokens (below FLAT_TOKENS, announced without summaries) and the tokens past them
 * (through their group and top counters) alike — and nothing when nothing was announced. Run in
 * a fresh process of this runtime (tests/fixtures/notify_page_collect.ts): this one's page has
 * its flat tokens taken by earlier tests' sessions.
 *
 * A nap (the engine blocking its thread between batches) returns at once when the doorbell
 * moved since the value it was given, times out otherwise, and a peer's announcement during it
 * wakes it and takes the napping flag (the next announcer pays no wake).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { RUNTIME, type RuntimeName } from "../../util/runtime.ts";
import { withChild } from "../util/proc.ts";
import { loadHelper } from "../../ffi/helper.ts";
import { PeerNotifyPage, ProcessNotifyPage } from "../../transport/shm/notify_page.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test("notify page: a collect names exactly the announced tokens, flat and summarised", async () => {
  const line = await withChild(
    RUNTIME as RuntimeName,
    "tests/fixtures/notify_page_collect.ts",
    { ready: /notify-page (ok|FAIL[^\n]*)/ },
    (child) => Promise.resolve(/notify-page (ok|FAIL[^\n]*)/.exec(child.output())![1]),
  );
  assertEquals(line, "ok");
});

test("notify page: a nap returns at once for a moved doorbell, times out otherwise, and clears its flag", async () => {
  const own = await ProcessNotifyPage.forProcess(await loadHelper());
  const seen = own.doorbell();
  own.wake(); // the doorbell moves past `seen`
  assertEquals(own.nap(seen, 1_000_000), true, "a moved doorbell ends the nap at once");
  assertEquals(own.nap(own.doorbell(), 1000), false, "nothing announced: the nap times out");
  assertEquals(own.napping, false, "the flag is down after a nap");
});

test("notify page: a peer's announcement wakes a process that naps", async () => {
  const verdict = await withChild(
    RUNTIME as RuntimeName,
    "tests/fixtures/notify_page_nap.ts",
    { ready: /notify-nap ready (\d+) (\d+)/ },
    async (child) => {
      const m = /notify-nap ready (\d+) (\d+)/.exec(child.output())!;
      const peer = await PeerNotifyPage.open(
        { pid: Number(m[1]), fd: Number(m[2]) },
        await loadHelper(),
      );
      try {
        for (let i = 0; i < 5000 && !peer.napping; i++) await sleep(1);
        assert(peer.napping, "the child never napped");
        peer.announce(0);
        assertEquals(peer.napping, false, "the announcer took the flag");
        for (let i = 0; i < 5000 && !/notify-nap (woken|FAIL)/.test(child.output()); i++) {
          await sleep(1);
        }
        return /notify-nap (woken after \d+ timeouts napping=\w+|FAIL[^\n]*)/.exec(child.output())
          ?.[1];
      } finally {
        peer.release();
      }
    },
  );
  // Any count of timeouts before the announcement (a loaded host) is fine; a nap the announcement
  // did not wake times out, and every later nap starts from the moved doorbell: FAIL.
  assert(/^woken after \d+ timeouts napping=false$/.test(verdict ?? ""), `child: ${verdict}`);
});
