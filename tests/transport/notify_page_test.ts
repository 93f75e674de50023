/**
 * The process notify page: a collect reports exactly the tokens announced since the last one —
 * the flat tokens (below FLAT_TOKENS, announced without summaries) and the tokens past them
 * (through their group and top counters) alike — and nothing when nothing was announced. Run in
 * a fresh process of this runtime (tests/fixtures/notify_page_collect.ts): this one's page has
 * its flat tokens taken by earlier tests' sessions.
 */
import { assertEquals, test } from "../harness.ts";
import { RUNTIME, type RuntimeName } from "../../util/runtime.ts";
import { withChild } from "../util/proc.ts";

test("notify page: a collect names exactly the announced tokens, flat and summarised", async () => {
  const line = await withChild(
    RUNTIME as RuntimeName,
    "tests/fixtures/notify_page_collect.ts",
    { ready: /notify-page (ok|FAIL[^\n]*)/ },
    (child) => Promise.resolve(/notify-page (ok|FAIL[^\n]*)/.exec(child.output())![1]),
  );
  assertEquals(line, "ok");
});
