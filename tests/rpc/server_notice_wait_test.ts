/**
 * `rpc/session/client/server_notice_wait.ts`: a client session that failed on its side waits for
 * the server's notice only while its Watch is open, takes the server's reason (or its own, when
 * the server only reports that this client ended the session), and fails its calls at the latest
 * after the wait, or at once when the Watch ends.
 * @module
 */
import {
  SERVER_NOTICE_WAIT_MS,
  ServerNoticeWait,
} from "../../rpc/session/client/server_notice_wait.ts";
import { assert, assertEquals, test } from "../harness.ts";

test("no Watch open: no wait (the calls fail at once)", () => {
  const g = new ServerNoticeWait();
  const told: string[] = [];
  assertEquals(g.begin("fabric failed: X", (r) => told.push(r)), false);
  assertEquals(g.running, false);
  assertEquals(told, []);
  assertEquals(g.notice("whatever"), null);
});

test("the server's notice during the wait names the server's reason with this side's", () => {
  const g = new ServerNoticeWait();
  const told: string[] = [];
  g.watching = true;
  assert(g.begin("fabric failed: URMA_CR_REM_ACCESS_ABORT_ERR", (r) => told.push(r)));
  assert(g.running);
  assertEquals(
    g.notice("its fabric endpoint failed: the shared JFC failed: overrun"),
    "the server ended the session: its fabric endpoint failed: the shared JFC failed: overrun " +
      "(this side saw: fabric failed: URMA_CR_REM_ACCESS_ABORT_ERR)",
  );
  assertEquals(g.running, false);
  g.end(); // nothing left to finish
  assertEquals(told, [], "the caller fails the calls with the returned reason");
});

test("a notice that only says this client ended the session keeps this side's reason", () => {
  const g = new ServerNoticeWait();
  g.watching = true;
  g.begin("fabric post failed: boom", () => {});
  assertEquals(
    g.notice("the client ended it: fabric post failed: boom"),
    "fabric post failed: boom",
  );
});

test("the Watch ending ends the wait at once with this side's reason; once only", () => {
  const g = new ServerNoticeWait();
  const told: string[] = [];
  g.watching = true;
  g.begin("fabric failed: A", (r) => told.push(r));
  assertEquals(g.begin("fabric failed: B", (r) => told.push(r)), false, "one wait at a time");
  g.watching = false;
  assertEquals(told, ["fabric failed: A"]);
  g.end();
  assertEquals(told, ["fabric failed: A"], "safe twice");
});

test("with no notice the calls fail after the wait, naming this side's reason", async () => {
  const g = new ServerNoticeWait();
  const told: string[] = [];
  g.watching = true;
  const t0 = performance.now();
  g.begin("fabric failed: C", (r) => told.push(r));
  while (told.length === 0 && performance.now() - t0 < 10_000) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assertEquals(told, ["fabric failed: C"]);
  assert(performance.now() - t0 >= SERVER_NOTICE_WAIT_MS - 5, "not before the wait ended");
});
