/**
 * Issue 12 item 5: every write of a response is checked. A body write the fabric refuses (the
 * faults port's `fail-next-write` on the server's endpoint) fails that call with a clear error
 * and nothing else: the other calls in flight get their answers, the session stays up, the
 * next calls go over the fabric. Runs over every fabric of the region suite (shm, simulated URMA).
 */
import { assert, assertEquals, test } from "../harness.ts";
import { ERESPONSE, RpcError } from "../../rpc/errors.ts";
import { client, FABRIC, FABRIC_LABEL, pattern, startServer } from "./util.ts";

test(
  "a refused response body fails that call only (clear error); the session keeps serving",
  async () => {
    const { server, log } = await startServer();
    const c = await client(server);
    try {
      await c.call("test.Fabric", "Echo", pattern(16, 0));
      const ss = [...server.fabric!.sessions][0];
      ss.endpoint.faults.inject("fail-next-write");
      const calls = Array.from({ length: 6 }, (_, i) => ({
        service: "test.Fabric",
        method: "Echo",
        request: pattern(200, i + 1),
      }));
      const settled = await Promise.allSettled(
        calls.map((x) => c.call(x.service, x.method, x.request)),
      );
      const failed = settled.filter((r) => r.status === "rejected");
      assertEquals(failed.length, 1, "exactly the call whose body write was refused failed");
      const e = (failed[0] as PromiseRejectedResult).reason;
      assert(e instanceof RpcError, `an RpcError, not ${e}`);
      assertEquals(e.errorCode, ERESPONSE);
      assert(/could not write the answer/.test(e.errorText), `error text: ${e.errorText}`);
      settled.forEach((r, i) => {
        if (r.status === "fulfilled") {
          assertEquals([r.value.path, r.value.response], ["EAGER", calls[i].request], `call ${i}`);
        }
      });
      assertEquals(ss.closedReason, null, "the session is still open");
      assertEquals(ss.bodyWriteFailures, 1);
      assert(log.warnings.some((w) => /could not be written/.test(w)), "logged");
      for (let i = 0; i < 5; i++) {
        const r = await c.call("test.Fabric", "Echo", pattern(64, 50 + i));
        assertEquals([r.path, r.fabric, r.response], ["EAGER", FABRIC_LABEL, pattern(64, 50 + i)]);
      }
      assertEquals(c.session!.failed, false);
    } finally {
      await c.close();
      await server.close();
    }
  },
  { skip: FABRIC === "verbs" ? "the verbs endpoint has no fail-next-write fault yet" : false },
);
