/**
 * `verbus call --header NAME=VALUE` (repeatable): every call of the command carries the headers —
 * demo ops and `--method` alike, over shm (the path stays EAGER) and over TCP — mapped as a
 * Connect client's are (log-id → log_id, x-request-id → request_id, others → user_fields, names
 * lower-cased, a name given twice joined); a malformed value is a usage error naming it.
 */
import { main } from "../../cli/call.ts";
import { headerOptions } from "../../cli/call_headers.ts";
import { DEMO_SERVICE, demoService } from "../../examples/demo/mod.ts";
import { type CallContext, type Handler, serve } from "../../mod.ts";
import { assert, assertEquals, test } from "../harness.ts";

const TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/** Runs `verbus call ARGS` in this process; its exit code and the lines it printed. */
async function call(args: string[]): Promise<{ rc: number; out: string[]; err: string[] }> {
  const out: string[] = [], err: string[] = [];
  const log = console.log, error = console.error;
  console.log = (m: string) => void out.push(String(m));
  console.error = (m: string) => void err.push(String(m));
  try {
    return { rc: await main(args), out, err };
  } finally {
    console.log = log;
    console.error = error;
  }
}

test("verbus call --header: demo ops and --method carry the headers, shm stays EAGER", async () => {
  const seen: Record<string, unknown>[] = [];
  const record = (h: Handler): Handler => (req, ctx: CallContext) => {
    seen.push({
      method: ctx.method,
      fields: ctx.userFields ? Object.fromEntries(ctx.userFields) : undefined,
      requestId: ctx.requestId,
      logId: ctx.logId,
    });
    return h(req, ctx);
  };
  const demo = demoService();
  const methods = demo[DEMO_SERVICE];
  const server = await serve({
    port: 0,
    services: {
      ...demo,
      [DEMO_SERVICE]: { ...methods, Echo: record(methods.Echo), Ping: record(methods.Ping) },
    },
    logger: { warn() {} },
  });
  try {
    const headers = [
      "--header",
      `traceparent=${TRACEPARENT}`,
      "--header",
      "X-Tenant=t1",
      "--header",
      "x-tenant=t2",
      "--header",
      "x-request-id=req-1",
      "--header",
      "log-id=42",
    ];
    for (const fabric of ["auto", "tcp"]) {
      seen.length = 0;
      const r = await call([
        "--port",
        String(server.port),
        "--fabric",
        fabric,
        "--json",
        ...headers,
        "--echo",
        "hi",
        "--method",
        `${DEMO_SERVICE}/Ping`,
      ]);
      assertEquals(r.rc, 0, r.err.join("\n"));
      const lines = r.out.map((l) => JSON.parse(l));
      assertEquals(lines.map((l) => [l.op, l.ok, l.path]), [
        ["echo", true, fabric === "auto" ? "EAGER" : "TCP_FALLBACK"],
        ["method", true, fabric === "auto" ? "EAGER" : "TCP_FALLBACK"],
      ]);
      const want = {
        fields: { traceparent: TRACEPARENT, "x-tenant": "t1, t2" },
        requestId: "req-1",
        logId: 42,
      };
      assertEquals(seen, [{ method: "Echo", ...want }, { method: "Ping", ...want }]);
    }
  } finally {
    await server.close();
  }
});

test("verbus call --header: a malformed value is a usage error naming it", async () => {
  for (const bad of ["novalue", "bad name=v", "log-id=abc", "log-id=18446744073709551616"]) {
    const r = await call(["--port", "1", "--ping", "--header", bad]);
    assertEquals(r.rc, 2, `${bad}: ${r.err.join("\n")}`);
    assert(/header/.test(r.err.join("\n")), r.err.join("\n"));
  }
  assertEquals(headerOptions(["log-id=18446744073709551615"]), { logId: -1 });
  assertEquals(headerOptions(["x-empty="]).userFields?.get("x-empty"), "");
});
