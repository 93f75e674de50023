/**
 * NativeHandle semantics with a fake destroy call: close() safe twice, parents close children
 * first (newest first, every parent of a shared child), dispose, and ClosedError after close.
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { ClosedError } from "../../errors.ts";
import { NativeHandle } from "../../ffi/handle.ts";
import type { NonNullPtr } from "../../ffi/types.ts";

const log: string[] = [];
class Fake extends NativeHandle {
  constructor(name: string, parent: NativeHandle | NativeHandle[] | null) {
    super(name, 1 as unknown as NonNullPtr, parent, () => log.push(name));
  }
}

test("close is safe twice and the handle refuses use afterwards", () => {
  log.length = 0;
  const a = new Fake("a", null);
  a.close();
  a.close();
  assertEquals(log, ["a"]);
  assert(a.closed);
  assertThrows(() => a.handle, ClosedError, "a is closed");
});

test("a parent closes its children first, newest first; a child of two parents goes with either", () => {
  log.length = 0;
  const ctx = new Fake("ctx", null);
  const pd = new Fake("pd", ctx);
  const cq = new Fake("cq", ctx);
  const qp = new Fake("qp", [pd, cq]);
  const mr = new Fake("mr", pd);
  assertEquals(pd.openChildren, 2);
  cq.close(); // closes the QP that uses it first
  assertEquals(log, ["qp", "cq"]);
  assert(qp.closed && !pd.closed);
  assertEquals(pd.openChildren, 1, "the QP left its other parent too");
  ctx.close();
  assertEquals(log, ["qp", "cq", "mr", "pd", "ctx"]);
  assert(mr.closed && pd.closed);
});

test("using-declarations dispose handles at scope end", () => {
  log.length = 0;
  {
    using _x = new Fake("x", null);
  }
  assertEquals(log, ["x"]);
});
