/**
 * The channel's table of pending calls: slot by id, overflow for a call still pending when its
 * slot comes round again, growth past half full, oldest-first listing for expiry and close.
 */
import { newChannelCall, PendingCall, PendingTable } from "../../rpc/tcp/channel_call.ts";
import { assert, assertEquals, test } from "../harness.ts";

const owner = { _expire() {} };
const named = { ...newChannelCall(), service: "s", method: "m" };
const call = (id: number) => new PendingCall(owner, id, named, 1000, 0);

test("pending table: in-order traffic, a slow call overflowing, growth, listing", () => {
  const t = new PendingTable();
  const slow = call(1);
  t.add(slow);
  // 10,000 calls with 32 in flight pass the slow one: its slot is reused, it must stay findable.
  const live: PendingCall[] = [];
  for (let id = 2; id < 10_002; id++) {
    const p = call(id);
    t.add(p);
    live.push(p);
    if (live.length > 32) {
      const q = live.shift()!;
      assertEquals(t.get(q.id), q);
      t.delete(q);
      assertEquals(t.get(q.id), undefined);
    }
  }
  assertEquals(t.get(1), slow, "the slow call survived its slot being reused");
  assertEquals(t.size, 33);
  assertEquals(t.inOrder().map((p) => p.id), [1, ...live.map((p) => p.id)]);
  t.delete(slow);
  assertEquals(t.get(1), undefined);
  // 5,000 at once: the table grows and finds every one.
  const many = Array.from({ length: 5000 }, (_, i) => call(20_000 + i));
  for (const p of many) t.add(p);
  for (const p of many) assertEquals(t.get(p.id), p);
  assertEquals(t.size, 5032);
  assertEquals(t.get(0), undefined, "id 0 is never a call");
  assertEquals(t.get(123_456), undefined);
  const ids = t.inOrder().map((p) => p.id);
  assert(ids.every((id, i) => i === 0 || ids[i - 1] < id), "oldest first");
  t.clear();
  assertEquals(t.size, 0);
  assertEquals(t.get(20_000), undefined);
});
