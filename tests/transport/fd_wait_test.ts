/**
 * `transport/fd_wait.ts`: a long wait on an fd that ends when the fd becomes readable, when its
 * owner wakes it, or when its owner closes it (the eventfd is closed once the wait returned).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { loadHelper } from "../../ffi/helper.ts";
import { loadLibc } from "../../ffi/libc.ts";
import { FD_READABLE, FD_WOKEN, WakeableFdWait } from "../../transport/fd_wait.ts";

test("a wakeable fd wait returns on readable, on wake and on close, then closes its eventfd", async () => {
  const helper = await loadHelper(), libc = await loadLibc();
  const h = helper.lib.symbols;
  // Eventfds stand for the channel / async fd: one made readable, one never.
  const ready = h.vb_eventfd(), quiet = h.vb_eventfd();
  assert(ready >= 0 && quiet >= 0, "two eventfds to watch");
  try {
    const w = new WakeableFdWait(helper, 10_000, 100);
    h.vb_eventfd_signal(ready);
    assertEquals(await w.wait(ready), FD_READABLE);
    let t = performance.now();
    const woken = w.wait(quiet);
    setTimeout(() => w.wake(), 20);
    assertEquals(await woken, FD_WOKEN);
    assert(performance.now() - t < 5000, "the wake ended the 10 s wait");
    const closed: number[] = [];
    t = performance.now();
    const pending = w.wait(quiet);
    w.close((fd) => {
      closed.push(fd);
      libc.symbols.close(fd);
    });
    assertEquals(closed.length, 0, "not closed under a wait in progress");
    assertEquals(await pending, FD_WOKEN);
    assert(performance.now() - t < 5000, "the close ended the 10 s wait");
    assertEquals(closed.length, 1, "closed once the wait returned");
    w.close(() => closed.push(-1));
    assertEquals(closed.length, 1, "close is safe twice");
    assertEquals(w.waits, 3);
  } finally {
    libc.symbols.close(ready);
    libc.symbols.close(quiet);
  }
});
