/**
 * The progress loop's busy-poll lets callers run: a caller several awaits away from the promise a
 * step resolved submits its next call during the spin, not after the spin gave up (issue 11:
 * through one `async` wrapper a call at 1 in flight took ~130 µs instead of ~20 µs).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { ProgressLoop } from "../../rpc/session/progress.ts";

/** A loop over a fake step whose "answers" are instant: each submitted call completes at the next poll. */
function harness(spinUs: number) {
  let pending: (() => void) | null = null;
  let emptyPolls = 0, running = true;
  const loop = new ProgressLoop(
    () => {
      if (pending) {
        const done = pending;
        pending = null;
        done();
        return 1;
      }
      emptyPolls++;
      return 0;
    },
    () => new Promise((r) => setTimeout(() => r(false), 1)),
    () => running,
    { spinUs, idleAfterMs: 1000 },
    () => {},
    { cores: 2, runnable: () => 1, peerAsleep: () => false },
  );
  const call = () =>
    new Promise<void>((r) => {
      pending = r;
      loop.start();
    });
  return { call, emptyPolls: () => emptyPolls, stop: () => (running = false) };
}

async function through(depth: number, call: () => Promise<void>): Promise<void> {
  if (depth === 0) return await call();
  return await through(depth - 1, call);
}

for (const depth of [0, 1, 4]) {
  test(`a caller ${depth} awaits away submits during the spin (few empty polls per call)`, async () => {
    const h = harness(50_000); // a 50 ms spin: a caller stuck behind it would show thousands of polls
    const calls = 200;
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) await through(depth, h.call);
    const ms = performance.now() - t0;
    h.stop();
    const perCall = h.emptyPolls() / calls;
    // Each await level costs the caller a microtask or two; the loop polls once per microtask.
    assert(perCall <= 4 * (depth + 2), `${perCall} empty polls per call at depth ${depth}`);
    // …and no call waited for a spin to run out (200 × 50 ms would be 10 s).
    assert(ms < 5000, `${ms.toFixed(0)} ms for ${calls} calls`);
    assertEquals(typeof perCall, "number");
  });
}
