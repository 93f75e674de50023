/**
 * The C helper on the host: batched descriptor building (through the no-op sink, which reads
 * back what TypeScript wrote), argument validation, futex wait/wake through the nonblocking path.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { ffi } from "../../ffi/ffi.ts";
import { loadHelper } from "../../ffi/helper.ts";
import { loadLibrary } from "../../ffi/loader.ts";
import { HELPER_SPEC } from "../../ffi/symbols/helper.ts";
import { IBV_WR } from "../../ffi/symbols/libibverbs.ts";
import { FULL, SendBatch } from "../../transport/verbs/send_batch.ts";

test("SendBatch → vb_bench_sink_post_send: the helper reads back every SGE length TypeScript wrote", async () => {
  const h = await loadHelper();
  const b = new SendBatch(16, 32);
  let total = 0;
  for (let i = 0; i < 16; i++) {
    // two SGEs per WR, lengths 100+i and 7*i
    b.sge(0x7f00_0000_0000 + i * 4096, 100 + i, 0x1234);
    b.sge(0x7f00_1000_0000 + i * 4096, 7 * i, 0x1234);
    total += 100 + i + 7 * i;
    assertEquals(b.wr(IBV_WR.RDMA_WRITE, 0, i, 0x7f00_2000_0000, 0x99, 0), i);
  }
  assertEquals(Number(h.lib.symbols.vb_bench_sink_post_send(b.descs, b.sges, b.length)), total);
  assertEquals(b.wr(IBV_WR.RDMA_WRITE, 0, 99, 0, 0, 0), FULL, "17th WR → FULL, not a throw");
  b.reset();
  assertEquals(b.length, 0);
  // An unknown opcode is rejected by the helper (EINVAL), not posted.
  b.sge(0x1000, 8, 1);
  b.wr(99, 0, 1, 0, 0, 0);
  assertEquals(Number(h.lib.symbols.vb_bench_sink_post_send(b.descs, b.sges, b.length)), -22);
});

test("helper: data-path calls validate their arguments (NULL qp/cq → EINVAL, never a crash)", async () => {
  const h = await loadHelper();
  const b = new SendBatch(1, 1);
  b.sge(0x1000, 8, 1);
  b.wr(IBV_WR.SEND, 0, 1, 0, 0, 0);
  assertEquals(h.lib.symbols.vb_post_send(null, b.descs, b.sges, 1, b.badIndex), 22);
  assertEquals(
    h.lib.symbols.vb_post_send(null, b.descs, b.sges, 0, b.badIndex),
    0,
    "empty batch is a no-op",
  );
  assertEquals(h.lib.symbols.vb_poll_cq(null, 4, new Uint8Array(160)), -22);
  assertEquals(h.lib.symbols.vb_req_notify_cq(null, 0), 22);
  assertEquals(h.lib.symbols.vb_noop(), 0);
});

test("futex: timeout, value mismatch, and a wake from the JS thread end a nonblocking wait", async () => {
  const f = await ffi();
  // A library instance of its own (on Bun: its own Worker pool), so waits other suites left
  // parked in the shared instance cannot delay this one.
  await loadHelper();
  const h = { lib: await loadLibrary(HELPER_SPEC) };
  // Only `p`, a number, goes to the waits: the test must keep `word` itself alive until they are
  // over (it reads it at the end). A typed array nothing references any more is collected, and
  // on Bun its bytes were reused mid-test on a loaded suite: the wait then found another value
  // there and returned 1 at once, and the wake loop below never found a waiter.
  const word = new Uint32Array(new SharedArrayBuffer(64));
  const p = f.ptrOf(word);
  const t0 = performance.now();
  assertEquals(await h.lib.nonblocking.vb_futex_wait(p, 0, 30), 2, "timed out");
  collectGarbage(); // what the rest of a suite does meanwhile: `word` must survive it
  assert(performance.now() - t0 >= 25, "waited about the timeout");
  assertEquals(
    await h.lib.nonblocking.vb_futex_wait(p, 1, 1000),
    1,
    "value differs → returns at once",
  );
  // A long timeout: the wait starts on another thread (on Bun a Worker, which a loaded machine
  // may take a while to start); what matters is that the wake, not the timeout, ends it.
  const waiting = h.lib.nonblocking.vb_futex_wait(p, 0, 20_000);
  const t1 = performance.now();
  // Keep waking until the waiter is parked.
  let woken = 0;
  while (woken === 0 && performance.now() - t1 < 15_000) {
    await new Promise((r) => setTimeout(r, 5));
    woken = h.lib.symbols.vb_futex_wake(p, 1);
  }
  assertEquals(woken, 1, "one waiter woken");
  assertEquals(await waiting, 0, "wait returned 0 (woken, not timed out)");
  assert(performance.now() - t1 < 15_000, "woken long before its 20 s timeout");
  assertEquals(word[0], 0, "the waits and the wake left the word alone");
  h.lib.close();
});

/** Makes garbage of the size `word` has, with other bytes, and collects it (Bun can force it). */
function collectGarbage(): void {
  for (let i = 0; i < 20_000; i++) new Uint32Array(new SharedArrayBuffer(64))[0] = 0xdeadbeef;
  // deno-lint-ignore no-explicit-any
  (globalThis as any).Bun?.gc(true);
}
