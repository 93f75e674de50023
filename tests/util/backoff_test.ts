/**
 * Retry delays: doubling per failure, the cap, and the ±20 % jitter that keeps clients which
 * failed together from retrying in step (the fabric link's re-negotiation, consul and etcd).
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { backoffMs, jitter } from "../../util/backoff.ts";

test("backoff doubles per failure from the base and stops at the cap (jitter at its middle)", () => {
  const mid = () => 0.5;
  assertEquals([1, 2, 3, 4, 5, 6].map((f) => backoffMs(f, 100, 1000, mid)), [
    100,
    200,
    400,
    800,
    1000,
    1000,
  ]);
  assertEquals(backoffMs(0, 100, 1000, mid), 100);
  assertEquals(backoffMs(1, 0, 1000, mid), 0);
  assertEquals(backoffMs(10_000, 2000, 30_000, mid), 30_000);
});

test("backoff is spread ±20 %: the ends of the draw, and many clients do not retry in step", () => {
  assertEquals(backoffMs(3, 100, 1000, () => 0), 320);
  assertEquals(backoffMs(3, 100, 1000, () => 0.999999), 480);
  assertEquals(jitter(30_000, () => 0), 24_000);
  const delays = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const d = backoffMs(2, 2000, 30_000);
    assert(d >= 3200 && d <= 4800, `delay ${d} out of ±20 % of 4000`);
    delays.add(d);
  }
  assert(delays.size > 50, `200 clients drew only ${delays.size} distinct delays`);
});
