/**
 * The agent's held answers (`rpc/agent/held_answers.ts`): per producer in arrival order, placed
 * oldest first until one finds no room, dropped whole for a producer that is gone.
 * @module
 */
import { assertEquals, test } from "../harness.ts";
import { HeldAnswers } from "../../rpc/agent/held_answers.ts";

test("held answers: in order per producer, a head without room blocks only its producer", () => {
  const h = new HeldAnswers<string>();
  h.push(1, 0, "a0");
  h.push(1, 1, "a1");
  h.push(2, 5, "b5");
  assertEquals([h.size, h.has(1), h.has(2), h.has(3)], [3, true, true, false]);
  const seen: string[] = [];
  // Producer 1 has room for one answer; producer 2 for all.
  let room1 = 1;
  const placed = h.place((p, k, r) => {
    if (p === 1 && room1-- <= 0) return false;
    seen.push(`${p}:${k}:${r}`);
    return true;
  });
  assertEquals([placed, seen, h.size, h.has(1), h.has(2)], [
    2,
    ["1:0:a0", "2:5:b5"],
    1,
    true,
    false,
  ]);
  assertEquals(h.place(() => true), 1, "the rest once room came");
  assertEquals([h.size, h.producers()], [0, []]);
});

test("held answers: drop returns a gone producer's answers and forgets them", () => {
  const h = new HeldAnswers<number>();
  h.push(3, 1, 10);
  h.push(3, 2, 20);
  h.push(4, 0, 30);
  assertEquals(h.drop(3).map((a) => [a.k, a.r]), [[1, 10], [2, 20]]);
  assertEquals([h.size, h.producers(), h.drop(3)], [1, [4], []]);
});
