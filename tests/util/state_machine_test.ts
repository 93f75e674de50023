/**
 * util/state_machine.ts: legal transitions move and are recorded with their reason and time
 * (ms since the machine was created, so a slow handshake step shows in its history); an illegal
 * one throws HANDSHAKE naming both states; FALLBACK_TCP and FAILED are logged once with the
 * reason, other states never.
 * @module
 */
import { assert, assertEquals, assertThrows, test } from "../harness.ts";
import { StateMachine } from "../../util/state_machine.ts";
import { VerbusError } from "../../errors.ts";

type S = "A" | "B" | "C" | "FALLBACK_TCP" | "FAILED";
const ALLOWED: Record<S, readonly S[]> = {
  A: ["B", "FAILED"],
  B: ["C", "FALLBACK_TCP", "FAILED"],
  C: [],
  FALLBACK_TCP: [],
  FAILED: [],
};

test("state machine: transitions carry their reason and when they happened", async () => {
  const lines: string[] = [];
  const m = new StateMachine<S>("probe", "A", ALLOWED, (l) => lines.push(l));
  m.to("B");
  await new Promise((r) => setTimeout(r, 30));
  m.to("FALLBACK_TCP", "no device");
  assertEquals(m.state, "FALLBACK_TCP");
  assertEquals(m.history.map((h) => [h.from, h.to, h.reason]), [
    ["A", "B", undefined],
    ["B", "FALLBACK_TCP", "no device"],
  ]);
  const [first, second] = m.history;
  assert(first.atMs >= 0 && first.atMs < 25, `first step at ${first.atMs} ms`);
  assert(second.atMs - first.atMs >= 25, `steps ${first.atMs} → ${second.atMs} ms: the wait`);
  assertEquals(lines, ["probe: B → FALLBACK_TCP: no device"]);
});

test("state machine: an illegal transition throws HANDSHAKE naming both states", () => {
  const m = new StateMachine<S>("probe", "A", ALLOWED);
  const e = assertThrows(() => m.to("C", "skipped B"));
  assert(e instanceof VerbusError && e.code === "HANDSHAKE", String(e));
  assert(/illegal transition A → C \(skipped B\)/.test((e as Error).message), String(e));
  assertEquals(m.state, "A");
  assertEquals(m.history.length, 0);
});
