/**
 * The dispatcher's method lookup: consecutive calls reuse the last lookup, which must never answer
 * a call with the handler of another method (alternating methods, a request meta object reused
 * with other names, unknown names after a hit).
 */
import type { NetAddress } from "../../transport/tcp/tcp.ts";
import { ENOMETHOD, ENOSERVICE } from "../../rpc/errors.ts";
import { Dispatcher, type ResponseSink, type ServerCall } from "../../rpc/protocol/dispatch.ts";
import type { RpcMeta, RpcRequestMeta } from "../../rpc/protocol/rpc_meta.ts";
import { EndNotice } from "../../util/end_notice.ts";
import { assertEquals, test } from "../harness.ts";

const te = new TextEncoder(), td = new TextDecoder();

/** Records every answer as `code:text` (error) or the response text. */
class Sink implements ResponseSink {
  readonly peer: NetAddress = { host: "test", port: 1 };
  readonly signal = new AbortController().signal;
  readonly lifetime = new EndNotice();
  readonly got: string[] = [];
  send(_call: ServerCall, response: Uint8Array, errorCode: number, errorText: string): void {
    this.got.push(errorCode === 0 ? td.decode(response) : `${errorCode}:${errorText}`);
  }
}

const reply = (s: string) => () => te.encode(s);
const services = {
  "a.A": { X: reply("a.X"), Y: reply("a.Y") },
  "b.B": { X: reply("b.X") },
};

test("alternating services and methods each reach their own handler", () => {
  const d = new Dispatcher(services, { warn() {} });
  const sink = new Sink();
  const order: [string, string][] = [
    ["a.A", "X"],
    ["a.A", "X"],
    ["a.A", "Y"],
    ["b.B", "X"],
    ["a.A", "X"],
    ["b.B", "X"],
    ["b.B", "Y"],
    ["c.C", "X"],
    ["a.A", "Y"],
  ];
  for (const [s, m] of order) {
    d.dispatch(
      { request: { serviceName: s, methodName: m }, correlationId: 1 },
      te.encode(""),
      new Uint8Array(0),
      sink,
    );
  }
  assertEquals(sink.got, [
    "a.X",
    "a.X",
    "a.Y",
    "b.X",
    "a.X",
    "b.X",
    `${ENOMETHOD}:no method Y in b.B`,
    `${ENOSERVICE}:no service c.C`,
    "a.Y",
  ]);
});

test("a request meta object reused with other names is looked up again", () => {
  const d = new Dispatcher(services, { warn() {} });
  const sink = new Sink();
  const req: RpcRequestMeta = { serviceName: "a.A", methodName: "X" };
  const meta: RpcMeta = { request: req, correlationId: 1 };
  d.dispatch(meta, new Uint8Array(0), new Uint8Array(0), sink);
  req.methodName = "Y";
  d.dispatch(meta, new Uint8Array(0), new Uint8Array(0), sink);
  req.serviceName = "b.B";
  req.methodName = "X";
  d.dispatch(meta, new Uint8Array(0), new Uint8Array(0), sink);
  assertEquals(sink.got, ["a.X", "a.Y", "b.X"]);
});
