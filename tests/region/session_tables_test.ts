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
} from "../../rpc/session/client/client_slots.ts";
import { type CallHooks, newCallPromise } from "../../rpc/session/client/fabric_call.ts";
import { VerbusError } from "../../errors.ts";
import { ResponseTokens } from "../../rpc/session/server/response_tokens.ts";
import { SNAPSHOT_BYTES, StagingArea } from "../../rpc/session/client/staging_area.ts";

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

test("slot table: a slot's record is made at its first use, and only then (issue 10)", () => {
  const { slots } = table(64);
  assertEquals(slots.recordsMade, 0, "an unused session keeps no slot records");
  for (let k = 0; k < 1000; k++) slots.release(slots.take(SLOT_CALL));
  assertEquals(slots.recordsMade, 1, "one call at a time reuses one record");
  assertEquals(slots.slot(0).seq, 1000, "the reused record kept counting");
  const held = Array.from({ length: 5 }, () => slots.take(SLOT_CALL));
  assertEquals(slots.recordsMade, 5, "five in flight: five records");
  for (const i of held) slots.release(i);
  // A slot never used (a response naming it, say) reads as FREE with seq 0; past the end: none.
  const never = slots.slot(63);
  assertEquals([never.state, never.seq, never.pending], [SLOT_FREE, 0, false]);
  assertEquals(slots.slot(64), undefined);
  assertEquals(slots.slot(-1), undefined);
  assertEquals(slots.recordsMade, 6);
  slots.release(62); // releasing a slot never taken changes nothing
  assertEquals([slots.freeCount, slots.busyCount], [64, 0]);
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

/** Puts a waiting caller on slot `i` (as ClientSession.submit does); returns its promise. */
function waitOn(slots: SlotTable, i: number) {
  const slot = slots.slot(i), promise = newCallPromise(slot);
  slot.pending = true;
  slot.path = "EAGER";
  slot.service = "s";
  slot.methodName = "m";
  return promise;
}

test("slot table: rejectAll rejects every waiting caller and forgets it", async () => {
  const { slots } = table(2);
  const i = slots.take(SLOT_CALL), j = slots.take(SLOT_RECLAIM);
  const promise = waitOn(slots, i);
  slots.rejectAll(() => new Error("down"));
  let message = "";
  await promise.catch((e) => (message = (e as Error).message));
  assertEquals(message, "down");
  assertEquals([slots.slot(i).pending, slots.slot(j).pending], [false, false]);
  assertEquals([slots.slot(i).resolve, slots.slot(i).reject], [null, null]);
  assertEquals(slots.busyCount, 2, "slots stay busy until their answers arrive");
});

test("slot table: settles calls in the public result shape and reports them to the hooks", async () => {
  const { slots } = table(4);
  const seen: string[] = [];
  const hooks: CallHooks = {
    fabricLabel: "shm",
    completed: (path, startedAt) => void seen.push(`completed ${path} ${startedAt}`),
    fabricError: () => void seen.push("fabric error"),
    redoOverTcp: (service, method) => {
      seen.push(`redo over TCP ${service}/${method}`);
      return Promise.resolve({
        response: new Uint8Array([9]),
        attachment: new Uint8Array(0),
        path: "TCP_FALLBACK",
        fabric: "tcp",
      });
    },
  };
  slots.hooks = hooks;
  const a = slots.take(SLOT_CALL), b = slots.take(SLOT_CALL), c = slots.take(SLOT_CALL);
  const pa = waitOn(slots, a), pb = waitOn(slots, b), pc = waitOn(slots, c);
  slots.resolve(a, new Uint8Array([1, 2]), new Uint8Array(0), "EAGER");
  slots.resolve(a, new Uint8Array([3]), new Uint8Array(0), "EAGER"); // settled already: ignored
  slots.reject(b, new VerbusError("FULL", "pool full"));
  slots.reject(c, new VerbusError("FABRIC", "down"));
  assertEquals(await pa, {
    response: new Uint8Array([1, 2]),
    attachment: new Uint8Array(0),
    path: "EAGER",
    fabric: "shm",
  });
  assertEquals((await pb).path, "TCP_FALLBACK", "a FULL answer is redone over TCP");
  let code = "";
  await pc.catch((e) => (code = (e as VerbusError).code));
  assertEquals(code, "FABRIC");
  assertEquals(seen, ["completed EAGER 0", "redo over TCP s/m", "fabric error"]);
  for (const i of [a, b, c]) slots.release(i);
  assertEquals([slots.busyCount, slots.freeCount], [0, 4], "O(1) release keeps the lists right");
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
