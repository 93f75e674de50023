/**
 * The sessions' bookkeeping tables, without a fabric: the client's slot table (free stack, busy
 * list, seq per use, extents returned on release, callers rejected on failure) and the server's
 * response tokens (one request per slot, named fields, no second open of a busy slot).
 * @module
 */
import { assert, assertEquals, test } from "../harness.ts";
import { BulkAllocator } from "../../rpc/region/bulk_allocator.ts";
import {
  NO_FREE_SLOT,
  SLOT_CALL,
  SLOT_FREE,
  SLOT_RECLAIM,
  SlotTable,
} from "../../rpc/session/client_slots.ts";
import { newInflightCall } from "../../rpc/session/fabric_call.ts";
import { ResponseTokens } from "../../rpc/session/response_tokens.ts";
import { SNAPSHOT_BYTES, StagingArea } from "../../rpc/session/staging_area.ts";

function table(count: number) {
  const bulk = new BulkAllocator(64 * 1024, 64, count);
  const local = new Uint8Array(SNAPSHOT_BYTES + 64 * 1024);
  const staging = new StagingArea(local, { offset: 0, size: local.length }, count);
  return { slots: new SlotTable(count, bulk, staging), bulk, staging };
}

test("slot table: the free list is a stack, seq counts the uses of a slot", () => {
  const { slots } = table(3);
  assertEquals([slots.freeCount, slots.busyCount], [3, 0]);
  const a = slots.take(SLOT_CALL), b = slots.take(SLOT_RECLAIM), c = slots.take(SLOT_CALL);
  assertEquals([a, b, c], [0, 1, 2], "lowest slots first");
  assertEquals(slots.take(SLOT_CALL), NO_FREE_SLOT);
  assertEquals([slots.slot(a).state, slots.slot(b).state], [SLOT_CALL, SLOT_RECLAIM]);
  assertEquals(slots.slot(a).seq, 1);
  slots.release(b);
  assertEquals(slots.slot(b).state, SLOT_FREE);
  assertEquals([slots.freeCount, slots.busyCount], [1, 2]);
  const busy = [slots.busyAt(0), slots.busyAt(1)].sort();
  assertEquals(busy, [0, 2], "the busy list holds exactly the slots in use");
  assertEquals(slots.take(SLOT_CALL), b, "the slot freed last is reused first");
  assertEquals(slots.slot(b).seq, 2, "each use bumps the seq");
  slots.release(b);
  slots.release(b); // releasing a FREE slot changes nothing
  assertEquals(slots.freeCount, 1);
});

test("slot table: release gives back the BULK and staging extents", () => {
  const { slots, bulk, staging } = table(2);
  const i = slots.take(SLOT_CALL), slot = slots.slot(i);
  slot.bulkOffset = bulk.alloc(1000);
  slot.stagingOffset = staging.alloc(1000);
  slot.lazyReadBytes = 12;
  assert(slot.bulkOffset >= 0 && slot.stagingOffset >= 0);
  assertEquals(bulk.freeExtents, 1);
  slots.release(i);
  assertEquals([slot.bulkOffset, slot.stagingOffset, slot.lazyReadBytes], [-1, -1, 0]);
  assertEquals(bulk.allocatedList(), [], "the BULK extent is free again");
  assertEquals(staging.alloc(64 * 1024 - SNAPSHOT_BYTES), 0, "all of staging is free again");
});

test("slot table: rejectAll rejects every waiting caller and forgets it", async () => {
  const { slots } = table(2);
  const i = slots.take(SLOT_CALL), j = slots.take(SLOT_RECLAIM);
  const call = newInflightCall("EAGER", Infinity, 7);
  slots.slot(i).call = call;
  slots.rejectAll(() => new Error("down"));
  let message = "";
  await call.promise.catch((e) => (message = (e as Error).message));
  assertEquals(message, "down");
  assertEquals([slots.slot(i).call, slots.slot(j).call], [null, null]);
  assertEquals(slots.busyCount, 2, "slots stay busy until their answers arrive");
});

test("response tokens: named fields per slot; a busy slot cannot be opened twice", () => {
  const tokens = new ResponseTokens(4);
  assert(tokens.open(2, 0xffff_ffff, true, false));
  assert(tokens.open(3, 5, false, true));
  assertEquals(tokens.openCount, 2);
  assertEquals([tokens.seq(2), tokens.prefersLazy(2), tokens.cameBulk(2)], [
    0xffff_ffff,
    true,
    false,
  ]);
  assertEquals([tokens.seq(3), tokens.prefersLazy(3), tokens.cameBulk(3)], [5, false, true]);
  assert(!tokens.open(2, 9, false, false), "slot 2 is still being served");
  assertEquals(tokens.seq(2), 0xffff_ffff, "a refused open changes nothing");
  assert(tokens.isOpen(2) && !tokens.isOpen(0));
  assert(!tokens.isOpen(4) && !tokens.isOpen(-1) && !tokens.isOpen(1.5), "not a slot index");
  tokens.close(2);
  tokens.close(2);
  assertEquals(tokens.openCount, 1);
  assert(tokens.open(2, 10, false, false), "free again once answered");
  assertEquals(tokens.seq(2), 10);
});
