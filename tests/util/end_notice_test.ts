/** util/end_notice.ts: callbacks once at the end, a signal only when asked, removal, late listeners. */
import { assert, assertEquals, test } from "../harness.ts";
import { EndNotice } from "../../util/end_notice.ts";

test("end runs every listener once, in order, and not a removed one", () => {
  const n = new EndNotice();
  const got: string[] = [];
  n.onEnd(() => got.push("a"));
  const off = n.onEnd(() => got.push("b"));
  n.onEnd(() => got.push("c"));
  assert(n.watched, "listeners make it watched");
  off();
  off(); // safe twice
  n.end("why");
  n.end("again");
  assertEquals(got, ["a", "c"]);
  assert(n.ended);
});

test("a listener after the end runs at once; its remover is harmless", () => {
  const n = new EndNotice();
  n.end();
  let ran = 0;
  n.onEnd(() => ran++)();
  assertEquals(ran, 1);
});

test("the signal is made only when asked, and carries the end's reason (also when asked late)", () => {
  const n = new EndNotice();
  assert(!n.watched, "nothing waits yet");
  const s = n.signal;
  assert(n.watched && !s.aborted);
  const reason = new Error("closed");
  n.end(reason);
  assert(s.aborted && s.reason === reason);
  const late = new EndNotice();
  late.end(reason);
  assert(late.signal.aborted && late.signal.reason === reason, "made after the end: aborted");
});
