/**
 * NativeHandle semantics with a fake destroy call: close() safe twice, parents close children
 * first (newest first, every parent of a shared child), dispose, and ClosedError after close;
 * forgotten children do not pile up in a living parent (fixtures/handle_gc.ts, run with a forced
 * collection on the runtime under test).
 */
import { spawnSync } from "node:child_process";
import { RUNTIME } from "../../ffi/runtime.ts";
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

test("children created and dropped do not pile up: the safety net frees them, children first", () => {
  const fixture = new URL("./fixtures/handle_gc.ts", import.meta.url).pathname;
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const [cmd, args] = RUNTIME === "deno"
    ? [g.Deno.execPath(), ["run", "-A", "--v8-flags=--expose-gc", fixture]]
    : [g.process.execPath, [fixture]];
  const run = spawnSync(cmd, args, { encoding: "utf8", timeout: 60_000 });
  assertEquals(run.status, 0, `fixture failed: ${run.stderr}`);
  const r = JSON.parse(run.stdout.trim().split("\n").pop()!);
  assertEquals(r.before, 1001, "the parent counted every child while they were referenced");
  // A conservative stack scan (Bun) may keep a few alive; 1,000 kept would be the old strong Set.
  assert(r.after <= 11, `the parent still counts ${r.after} children after a collection`);
  assertEquals(r.freedDropped, 1000 - (r.after - 1), "every collected child was freed");
  assert(!r.doomedParentFreed || r.childrenFreedFirst, "a parent was freed before its children");
  assertEquals(r.closedByParent, ["kept", "parent"], "close() closed the kept child, then itself");
  assertEquals(r.closedCount, 2);
  // Collected, not yet finalized, when its parent closed (V8 collects it for sure; Bun's
  // conservative scan may keep it, and then it closes as a live child, in the same order).
  if (RUNTIME === "deno") assert(r.orphanCollected, "the fixture's orphan was collected");
  assertEquals(r.orphanFreedBefore, 0, "no finalizer ran before the parent closed");
  assertEquals(
    r.orphanOrder,
    ["orphan", "orphan parent"],
    "the parent freed the collected child before itself",
  );
  assertEquals(r.orphanFrees, 2, "and the finalizer freed nothing twice");
});
