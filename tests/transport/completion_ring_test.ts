/**
 * The completion FIFO of the shm endpoint and the RDMA send ring: its storage starts small and
 * grows to its capacity without losing the order of records that wrapped around.
 */
import { assert, assertEquals, test } from "../harness.ts";
import { CompletionRing, FIRST_STORAGE } from "../../transport/completion_ring.ts";
import { Completions } from "../../transport/fabric.ts";

test("storage starts at 64 records and doubles to the capacity; order survives wrap-around and growth", () => {
  const ring = new CompletionRing(1000);
  assertEquals(ring.storage, FIRST_STORAGE, "a new ring holds 64 records, not 1000");
  let next = 0, expect = 0;
  const take = (n: number) => {
    for (let i = 0; i < n; i++) {
      assertEquals([ring.peekWrId(), ring.peekStatus()], [expect, expect % 7], `record ${expect}`);
      ring.shift();
      expect++;
    }
  };
  const put = (n: number) => {
    for (let i = 0; i < n; i++) assert(ring.push(next, next % 7), `push ${next}`), next++;
  };
  put(50);
  take(40); // head moves: the next records wrap around the 64-record storage
  put(60); // 70 waiting: grows while wrapped
  assertEquals([ring.length, ring.storage], [70, 128]);
  take(70);
  put(1000);
  assertEquals([ring.length, ring.storage], [1000, 1000]);
  assertEquals(ring.push(1, 1), false, "full at its capacity");
  const out = new Completions(300);
  for (let drained = 0; drained < 1000;) {
    const n = ring.drainInto(out);
    for (let i = 0; i < n; i++) {
      assertEquals([out.wrId[i], out.status[i]], [expect, expect % 7]), expect++;
    }
    drained += n;
  }
  assertEquals(ring.length, 0);
  assertEquals(new CompletionRing(0).push(1, 0), false, "a ring of capacity 0 takes nothing");
});
